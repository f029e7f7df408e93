package items

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/pace-cli/pace/runner"
)

// send returns a read that sends items, then returns err.
func send(err error, its ...runner.Item) func(context.Context, chan<- runner.Item) error {
	return func(ctx context.Context, out chan<- runner.Item) error {
		for _, it := range its {
			select {
			case out <- it:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return err
	}
}

// TestFeedToTheEnd: every item reaches In, skipped ones included; the
// count leaves them out, and onEnd gets it once In is closed.
func TestFeedToTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		end := int64(-1)
		f := NewFeed(context.Background(), send(nil, runner.Item{Text: "a"}, runner.Item{Text: "b", Skip: true}, runner.Item{Text: "c"}),
			func(n int64) { end = n })
		var texts []string
		for it := range f.In {
			texts = append(texts, it.Text)
		}
		got, ok := f.Result()
		if len(texts) != 3 || !ok || got.N != 2 || got.Err != nil || !got.All || end != 2 {
			t.Errorf("In gave %v; Result = %+v, %v; onEnd %d; want a b c, 2 read to the end", texts, got, ok, end)
		}
	})
}

// TestFeedStopped: a context that ends stops sending; the input was not
// read to its end, and onEnd is not called. A read error is kept.
func TestFeedStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		f := NewFeed(ctx, send(nil, runner.Item{Text: "a"}, runner.Item{Text: "b"}), func(int64) { t.Error("onEnd called for a stopped feed") })
		<-f.In
		cancel()
		for range f.In {
		}
		if got, ok := f.Result(); !ok || got.N != 1 || got.All {
			t.Errorf("Result = %+v, %v; want 1 read, not to the end", got, ok)
		}
		errBad := errors.New("bad input")
		f = NewFeed(context.Background(), send(errBad, runner.Item{Text: "a"}), func(int64) { t.Error("onEnd called after a read error") })
		for range f.In {
		}
		if got, _ := f.Result(); !errors.Is(got.Err, errBad) || got.All || got.N != 1 {
			t.Errorf("Result = %+v; want the read's error, 1 read", got)
		}
	})
}

// TestFeedBlocked: while read is blocked, Result says so.
func TestFeedBlocked(t *testing.T) {
	unblock := make(chan struct{})
	defer close(unblock)
	f := NewFeed(context.Background(), func(context.Context, chan<- runner.Item) error { <-unblock; return nil }, func(int64) {})
	if _, ok := f.Result(); ok {
		t.Errorf("Result while read is blocked = ok")
	}
}
