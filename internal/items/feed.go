package items

import (
	"context"

	"github.com/pace-cli/pace/runner"
)

// Feed sends the items of an input to a pool as they arrive, and counts
// them. In is what the pool takes items from; Result says what was read
// once reading has ended.
type Feed struct {
	// In is closed once reading has ended (its input, or ctx) and the
	// counts are known.
	In <-chan runner.Item

	done chan struct{}
	got  Got
}

// Got is what a Feed read.
type Got struct {
	N   int64 // items read, skipped ones not counted
	Err error // read's error
	All bool  // the input was read to its end
}

// NewFeed starts reading with read, which sends items on its channel
// (closing nothing) and returns when its input ends or its context does.
// Items are sent on In until ctx ends; after that they are read and
// dropped. At the input's end (read returned nil before ctx ended), onEnd
// gets how many items were read.
func NewFeed(ctx context.Context, read func(ctx context.Context, out chan<- runner.Item) error, onEnd func(n int64)) *Feed {
	in := make(chan runner.Item)
	f := &Feed{In: in, done: make(chan struct{})}
	go func() {
		defer close(in)
		defer close(f.done) // first: once In is closed, the counts are known
		counted := make(chan runner.Item)
		var err error
		go func() {
			defer close(counted)
			err = read(ctx, counted)
		}()
		var n int64
		for it := range counted {
			if ctx.Err() != nil {
				// Stopped: the rest is read to its end (the reader's
				// to stop) but not sent. Without this check a select
				// with a receiver waiting and ctx done picks either at
				// random, and an item read after the stop was sent.
				continue
			}
			select {
			case in <- it:
				if !it.Skip {
					n++
				}
			case <-ctx.Done():
			}
		}
		f.got = Got{N: n, Err: err, All: err == nil && ctx.Err() == nil}
		if f.got.All {
			onEnd(n)
		}
	}()
	return f
}

// Result returns what was read, and true, once reading has ended; false
// while read is still blocked (a pipe or a terminal read cannot be
// interrupted).
func (f *Feed) Result() (Got, bool) {
	select {
	case <-f.done:
		return f.got, true
	default:
		return Got{}, false
	}
}
