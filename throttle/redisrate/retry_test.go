package redisrate_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// checkBackoff checks that calls, the tries of one call to Redis that
// began at start, are spaced by the capped exponential backoff: each sleep
// lies within [backoff/2, backoff], or ends at the timeout.
func checkBackoff(t *testing.T, calls []fakeCall, start time.Time, timeout time.Duration) {
	t.Helper()
	backoff := redisrate.MinBackoff
	deadline := start.Add(timeout)
	for i := 1; i < len(calls); i++ {
		prev := calls[i-1].at
		d := calls[i].at.Sub(prev)
		left := deadline.Sub(prev)
		if lo, hi := min(backoff/2, left), min(backoff, left); d < lo || d > hi {
			t.Errorf("sleep %d before try %d: %v, want within [%v, %v]", i, i+1, d, lo, hi)
		}
		backoff = min(2*backoff, redisrate.MaxBackoff)
	}
}

func TestRetriesUntilRedisAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle = func(fakeCall) (any, error) {
			switch len(f.Calls()) {
			case 1, 2, 3:
				return nil, errConnRefused
			case 4:
				return nil, redisErr("LOADING Redis is loading the dataset in memory")
			}
			return admitted(1), nil
		}
		l := openFake(t, f, "10/s", redisrate.Options{Timeout: time.Minute})
		start := time.Now()
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatalf("Admit = %v, want an admission once Redis answers", err)
		}
		calls := f.Calls()
		if len(calls) != 5 {
			t.Errorf("%d calls, want 5 (4 failures, then the answer)", len(calls))
		}
		checkBackoff(t, calls, start, time.Minute)
		if !a.At.Equal(time.UnixMicro(calls[4].at.UnixMicro())) || a.Waited != time.Since(start) {
			t.Errorf("Admission = {At %v, Waited %v}, want the last try's instant and the whole retry", a.At, a.Waited)
		}
		s := l.Stats()
		if s.Store.Failures != 4 || s.Store.RoundTrips != 5 {
			t.Errorf("Stats().Store = %+v, want 5 round trips, 4 failures", s.Store)
		}
		if s.Admitted != 1 || s.Waits != 0 || s.Rules[0].Waits != 0 {
			t.Errorf("Stats() = %+v, want 1 admission and no rate wait", s)
		}
	})
}

func TestGivesUpAfterTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle = func(fakeCall) (any, error) { return nil, errConnRefused }
		l := openFake(t, f, "10/s", redisrate.Options{Timeout: 3 * time.Second})
		start := time.Now()
		_, err := l.Admit(context.Background(), 1)
		if !errors.Is(err, throttle.ErrBackend) {
			t.Fatalf("Admit = %v, want ErrBackend", err)
		}
		if !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "3s") {
			t.Errorf("error %q does not give the cause and the timeout", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("gave up after %v, want 3s (a last try at the deadline)", d)
		}
		calls := f.Calls()
		checkBackoff(t, calls, start, 3*time.Second)
		// 50ms, 100ms, ... 1.6s, then the rest: about 7 tries.
		if n := len(calls); n < 5 || n > 10 {
			t.Errorf("%d tries in 3s, want exponential backoff (5..10)", n)
		}
		if s := l.Stats(); s.Admitted != 0 || s.InFlight != 0 || s.Store.Failures != int64(len(calls)) {
			t.Errorf("Stats() = %+v, want nothing admitted and every try a failure", s)
		}
	})
}

func TestPermanentErrorsFailAtOnce(t *testing.T) {
	for _, cause := range []error{
		redisErr("WRONGPASS invalid username-password pair or user is disabled."),
		redisErr("NOAUTH Authentication required."),
		redisErr("WRONGTYPE Operation against a key holding the wrong kind of value"),
		redisErr("ERR unknown command 'EVALSHA'"),
		redis.ErrClosed,
	} {
		synctest.Test(t, func(t *testing.T) {
			f := newFake()
			f.handle = func(fakeCall) (any, error) { return nil, cause }
			l := openFake(t, f, "10/s", redisrate.Options{GlobalJobs: 1})
			start := time.Now()
			_, err := l.Admit(context.Background(), 1)
			if !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), cause.Error()) {
				t.Fatalf("Admit answered %q = %v, want ErrBackend naming it", cause, err)
			}
			if n, d := len(f.Calls()), time.Since(start); n != 1 || d != 0 {
				t.Errorf("answered %q: %d calls in %v, want one, no retry", cause, n, d)
			}
		})
	}
}

// outages records what OnOutage hears.
type outages struct {
	mu   sync.Mutex
	seen []redisrate.Outage
}

func (o *outages) report(e redisrate.Outage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, e)
}

func (o *outages) get() []redisrate.Outage {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]redisrate.Outage(nil), o.seen...)
}

func TestOnOutageWhenCallsFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle = func(fakeCall) (any, error) {
			if len(f.Calls()) <= 3 {
				return nil, errConnRefused
			}
			return admitted(1), nil
		}
		var o outages
		l := openFake(t, f, "10/s", redisrate.Options{OnOutage: o.report})
		start := time.Now()
		if _, err := l.Admit(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		seen := o.get()
		if len(seen) != 2 {
			t.Fatalf("OnOutage heard %+v, want down once, then up once", seen)
		}
		if down := seen[0]; !down.Down || !down.Since.Equal(start) || !errors.Is(down.Err, errConnRefused) {
			t.Errorf("first report %+v, want Down since %v for %q", down, start, errConnRefused)
		}
		if up := seen[1]; up.Down || !up.Since.Equal(start) || up.Err != nil {
			t.Errorf("second report %+v, want up again, down since %v", up, start)
		}
		// Error replies are answers: no outage.
		f.setHandle(func(fakeCall) (any, error) { return nil, redisErr("WRONGTYPE wrong kind of value") })
		if _, err := l.Admit(context.Background(), 1); !errors.Is(err, throttle.ErrBackend) {
			t.Errorf("Admit = %v, want ErrBackend", err)
		}
		if got := o.get(); len(got) != 2 {
			t.Errorf("OnOutage heard %+v after an error reply, want nothing new", got[2:])
		}
	})
}

func TestOnOutageWhenCallsStall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle = func(c fakeCall) (any, error) {
			if len(f.Calls()) == 1 {
				time.Sleep(3 * time.Second) // no answer for 3s
			}
			return admitted(1), nil
		}
		var o outages
		l := openFake(t, f, "10/s", redisrate.Options{OnOutage: o.report})
		start := time.Now()
		done := goAdmit(context.Background(), l, 1)
		time.Sleep(redisrate.StallAfter - time.Nanosecond)
		synctest.Wait()
		if got := o.get(); len(got) != 0 {
			t.Fatalf("OnOutage heard %+v before a call went %v unanswered", got, redisrate.StallAfter)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got := o.get(); len(got) != 1 || !got[0].Down || !got[0].Since.Equal(start) || got[0].Err != nil {
			t.Fatalf("OnOutage heard %+v after %v, want Down since %v, no error", got, redisrate.StallAfter, start)
		}
		if r := <-done; r.err != nil {
			t.Fatal(r.err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("admitted after %v, want 3s (when Redis answered)", d)
		}
		if got := o.get(); len(got) != 2 || got[1].Down || !got[1].Since.Equal(start) {
			t.Errorf("OnOutage heard %+v, want Down then up again", got)
		}
		// Answers in time say nothing.
		for range 3 {
			if _, err := l.Admit(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
		}
		if got := o.get(); len(got) != 2 {
			t.Errorf("OnOutage heard %+v after prompt answers, want nothing new", got[2:])
		}
	})
}

// An error reply a retry may cure (a read-only replica, a server loading
// its data, out of memory, unable to save) keeps pace from admitting
// anything as an outage does, and is told as one: it went unsaid for the
// whole timeout, and the error then said "no answer" of a Redis that had
// answered every try.
func TestOnOutageWhenRedisRefuses(t *testing.T) {
	for _, cause := range []redisErr{
		"READONLY You can't write against a read only replica.",
		"LOADING Redis is loading the dataset in memory",
		"OOM command not allowed when used memory > 'maxmemory'.",
		"MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.",
	} {
		synctest.Test(t, func(t *testing.T) {
			f := newFake()
			f.handle = func(fakeCall) (any, error) {
				if len(f.Calls()) <= 3 {
					return nil, cause
				}
				return admitted(1), nil
			}
			var o outages
			l := openFake(t, f, "10/s", redisrate.Options{OnOutage: o.report, Timeout: 3 * time.Second})
			start := time.Now()
			if _, err := l.Admit(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
			seen := o.get()
			if len(seen) != 2 {
				t.Fatalf("answered %q: OnOutage heard %+v, want down once, then up once", cause, seen)
			}
			if down := seen[0]; !down.Down || !down.Refused || !down.Since.Equal(start) || !errors.Is(down.Err, cause) {
				t.Errorf("first report %+v, want Down and Refused since %v for %q", down, start, cause)
			}
			if up := seen[1]; up.Down || !up.Refused || !up.Since.Equal(start) || up.Err != nil {
				t.Errorf("second report %+v, want up again after a refusal since %v", up, start)
			}

			// Refused until the timeout: the error says so, not "no answer".
			f.setHandle(func(fakeCall) (any, error) { return nil, cause })
			_, err := l.Admit(context.Background(), 1)
			if !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), string(cause)) ||
				!strings.Contains(err.Error(), "refused for 3s") || strings.Contains(err.Error(), "no answer") {
				t.Errorf("Admit, refused for the timeout = %v; want ErrBackend, \"refused for 3s\" and the reply", err)
			}
		})
	}
}
