package redisrate_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle/redisrate"
)

// Tests of what a caller who gives up sees while Redis accepts
// connections and never answers (a stopped server, a link gone silent),
// with go-redis's behaviour: a call ends at its context's deadline (the
// read timeout), never at its cancellation.

// errIOTimeout is what go-redis returns when a read reaches its deadline.
var errIOTimeout = errors.New("read tcp 127.0.0.1:1: i/o timeout")

// silence makes f answer no script call until the returned function is
// called: a call waits, heedless of its context's cancellation, until its
// context's deadline (then it fails as go-redis does) or until f answers
// again (then it is answered as f answered before, as a stopped Redis,
// continued, answers what it was sent).
func (f *fakeRedis) silence() (answer func()) {
	quiet := make(chan struct{})
	f.mu.Lock()
	h := f.handle
	f.mu.Unlock()
	f.setHandle(func(c fakeCall) (any, error) {
		var deadline <-chan time.Time
		if d, ok := c.ctx.Deadline(); ok {
			t := time.NewTimer(time.Until(d))
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-quiet:
		case <-deadline:
			return nil, errIOTimeout
		}
		if h != nil {
			return h(c)
		}
		return f.scriptReply(c), nil
	})
	return func() {
		f.setHandle(h)
		close(quiet)
	}
}

// elapsed returns how long f took.
func elapsed(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// TestCancelWhileRedisIsSilent: an admission waiting on a silent Redis
// (for the rates, or for a fleet-wide slot) returns as soon as its
// context is cancelled, and Close returns at once after it, a
// publication of the margin under way included; none waits for the call
// to reach its deadline. A slot the abandoned take got once Redis
// answers is given back.
func TestCancelWhileRedisIsSilent(t *testing.T) {
	for _, tt := range []struct {
		name       string
		globalJobs int
	}{{"rates", 0}, {"slot", 1}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				l := openFake(t, f, "10/s", redisrate.Options{GlobalJobs: tt.globalJobs, Timeout: time.Minute})
				answer := f.silence()
				ctx, cancel := context.WithCancel(context.Background())
				done := goAdmit(ctx, l, 1)
				synctest.Wait()
				l.SetMargin(time.Second) // published in the background: silent too
				time.Sleep(100 * time.Millisecond)
				cancel()
				if r, ok := returned(done); !ok || !errors.Is(r.err, context.Canceled) {
					t.Fatalf("Admit cancelled while Redis is silent: returned %v (%v), want context.Canceled at once", ok, r.err)
				}
				if d := elapsed(func() { l.Close() }); d != 0 {
					t.Errorf("Close took %v after a cancelled admission, want no wait", d)
				}
				answer()
				synctest.Wait()
				if n := f.held(); n != 0 {
					t.Errorf("%d fleet-wide slots held once Redis answered, want 0 (ops %q)", n, f.ops())
				}
				if tt.globalJobs > 0 {
					if ops := f.ops(); !slices.Equal(ops, []string{"take", "margin", "release"}) {
						t.Errorf("ops = %q, want take (left behind), margin, release of the slot the take got", ops)
					}
				}
			})
		})
	}
}

// TestReleaseWhileRedisIsSilent: giving a slot back to a silent Redis
// waits at most a second (once Redis is known not to answer, not at all),
// and so does Close with a renewal of a lease under way; each release is
// sent once, in the background, and lands once Redis answers.
func TestReleaseWhileRedisIsSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		l := openFake(t, f, "10/s", redisrate.Options{GlobalJobs: 3, Lease: 3 * time.Second, Timeout: time.Minute})
		ctx := context.Background()
		var release [3]func()
		for i := range release {
			a, err := l.Admit(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			release[i] = a.Release
		}
		answer := f.silence()
		if d := elapsed(release[0]); d != redisrate.StallAfter {
			t.Errorf("Release took %v while Redis is silent, want %v", d, redisrate.StallAfter)
		}
		// An admission waits on a take for longer than StallAfter: Redis
		// is reported not answering, and a release does not wait then.
		actx, cancel := context.WithCancel(ctx)
		done := goAdmit(actx, l, 1)
		time.Sleep(2 * redisrate.StallAfter)
		if d := elapsed(release[1]); d != 0 {
			t.Errorf("Release took %v once Redis is reported not answering, want no wait", d)
		}
		cancel()
		if _, ok := returned(done); !ok {
			t.Fatal("Admit cancelled while Redis is silent did not return")
		}
		// The last lease is renewed every second: a renewal is under way
		// when Close comes.
		time.Sleep(redisrate.DefaultLease + time.Second/2)
		if d := elapsed(func() { l.Close() }); d != 0 {
			t.Errorf("Close took %v with a renewal under way, want no wait", d)
		}
		answer()
		synctest.Wait()
		var taken, released []any
		for _, c := range f.Calls() {
			switch c.op() {
			case "take":
				taken = append(taken, c.member())
			case "release":
				released = append(released, c.member())
			}
		}
		for _, id := range taken[:3] {
			if n := countOf(released, id); n != 1 {
				t.Errorf("lease %v released %d times, want once (ops %q)", id, n, f.ops())
			}
		}
	})
}

// countOf returns how many times x is in s.
func countOf(s []any, x any) int {
	n := 0
	for _, y := range s {
		if y == x {
			n++
		}
	}
	return n
}

// TestCorrectCancelledWhileRedisIsSilent: a correction waits for a silent
// Redis as an admission does, and returns as soon as its context is
// cancelled, the admission's cost left as it was. A correction whose
// context has ended before it is still sent: the call's true cost is
// owed.
func TestCorrectCancelledWhileRedisIsSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		l := openFake(t, f, "cost:100/s", redisrate.Options{Timeout: time.Minute})
		a, err := l.Admit(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		answer := f.silence()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		if err := a.Correct(ctx, 3); !errors.Is(err, context.Canceled) || a.Cost != 10 {
			t.Errorf("Correct(ctx, 3) cancelled while Redis is silent = %v, Cost %d; want context.Canceled, 10", err, a.Cost)
		}
		if d := time.Since(start); d != 100*time.Millisecond {
			t.Errorf("Correct returned %v after it began, want at its cancellation (100ms)", d)
		}
		answer()
		synctest.Wait()
		n := len(f.Calls())
		if err := a.Correct(ctx, 4); !errors.Is(err, context.Canceled) || a.Cost != 10 {
			t.Errorf("Correct(ctx, 4) with ctx cancelled = %v, Cost %d; want context.Canceled, 10", err, a.Cost)
		}
		synctest.Wait()
		if ops := f.ops()[n:]; !slices.Equal(ops, []string{"correct"}) {
			t.Errorf("ops after a correction with its context cancelled = %q, want it sent all the same", ops)
		}
	})
}
