package redisrate_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/internal/strictserver"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// Reservations against a real server. On loopback Redis's clock is this
// process's, so "never before the reserved instant" can be checked
// directly: Admit returns no sooner than At.

// A call that does not fit is reserved in one round trip at the instant
// the oldest call leaves the window, and returns no sooner; one that
// would be reserved more than half the window ahead is told to wait, then
// reserved: two round trips, the same instant.
func TestLiveReserve(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	l := liveOpen(t, liveClient(t, srv.Addr()), "reserve", "1/300ms", redisrate.Options{})
	ctx := context.Background()
	admit := func(trips int64) throttle.Admission {
		t.Helper()
		before := l.Stats().Store.RoundTrips
		a, err := l.Admit(ctx, 1)
		returned := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Stats().Store.RoundTrips - before; got != trips {
			t.Errorf("%d round trips, want %d", got, trips)
		}
		if returned.Before(a.At) {
			t.Errorf("Admit returned %v before the reserved instant", a.At.Sub(returned))
		}
		return a
	}
	first := admit(2)                  // EVALSHA, NOSCRIPT on a new server, then EVAL
	time.Sleep(200 * time.Millisecond) // then 100ms ahead: within the horizon (150ms)
	second := admit(1)
	if want := first.At.Add(300 * time.Millisecond); !second.At.Equal(want) {
		t.Errorf("reserved at %v after the first call, want 300ms", second.At.Sub(first.At))
	}
	third := admit(2) // 300ms ahead: wait, then reserve
	if want := second.At.Add(300 * time.Millisecond); !third.At.Equal(want) {
		t.Errorf("reserved at %v after the second call, want 300ms", third.At.Sub(second.At))
	}
	if s := l.Stats(); s.Waits != 2 || s.Rules[0].Used != 1 || s.Rules[0].PeakUsage != 1 {
		t.Errorf("Stats() = %+v, want 2 waits, 1 in the window at the reserved instant", s)
	}
}

// A reservation given back (the caller's context ended) is free at once
// for another process: it gets the instant the first had, not a window
// later.
func TestLiveReserveCancel(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	a := liveOpen(t, liveClient(t, srv.Addr()), "cancel", "1/400ms", redisrate.Options{})
	b := liveOpen(t, liveClient(t, srv.Addr()), "cancel", "1/400ms", redisrate.Options{})
	first, err := a.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := a.Admit(ctx, 1); done <- err }()
	key := a.Keys()[1]
	waitFor(t, "the reservation", 5*time.Second, func() bool { return do(t, srv, "ZCARD", key) == "2" })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Admit = %v, want context.Canceled", err)
	}
	if n := do(t, srv, "ZCARD", key); n != "1" {
		t.Errorf("ZCARD = %s after the reservation was given back, want 1", n)
	}
	got, err := b.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if gap := got.At.Sub(first.At); gap < 400*time.Millisecond || gap >= 700*time.Millisecond {
		t.Errorf("the other process admitted %v after the first call, want the freed slot at 400ms, not 800ms", gap)
	}
	if s := a.Stats(); s.Admitted != 1 || s.InFlight != 1 {
		t.Errorf("Stats() = %+v, want the cancelled call not admitted", s)
	}
}

// A process that dies holding a reservation (here: its client is gone, so
// it cannot give it back) leaves it standing: the quota stays exact, and
// the reserved call's room is lost once.
func TestLiveReserveHolderGone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ca := liveClient(t, srv.Addr())
	a := liveOpen(t, ca, "gone", "1/300ms", redisrate.Options{Timeout: time.Second})
	b := liveOpen(t, liveClient(t, srv.Addr()), "gone", "1/300ms", redisrate.Options{})
	first, err := a.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := a.Admit(ctx, 1); done <- err }()
	key := a.Keys()[1]
	waitFor(t, "the reservation", 5*time.Second, func() bool { return do(t, srv, "ZCARD", key) == "2" })
	ca.Close()
	cancel()
	<-done
	got, err := b.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if gap := got.At.Sub(first.At); gap < 600*time.Millisecond {
		t.Errorf("the other process admitted %v after the first call, want after the standing reservation (600ms)", gap)
	}
	if s := a.Stats(); s.Store.Failures == 0 {
		t.Errorf("Stats().Store = %+v, want the failed give-back counted", s.Store)
	}
}

// Processes whose clocks are seconds apart share a quota exactly: every
// instant is Redis's, and a process's own clock enters only durations.
func TestLiveReserveSkewedClocks(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const rules = "4/150ms,10/600ms"
	var ls []*redisrate.Limiter
	for _, skew := range []time.Duration{-3 * time.Second, 0, 5 * time.Second} {
		ls = append(ls, liveOpen(t, liveClient(t, srv.Addr()), "skew", rules, redisrate.WithSkew(redisrate.Options{}, skew)))
	}
	var mu sync.Mutex
	var calls []throttle.Call
	var wg sync.WaitGroup
	for _, l := range ls {
		for range 2 {
			wg.Go(func() {
				for range 5 {
					a, err := l.Admit(context.Background(), 1)
					if err != nil {
						t.Error(err)
						return
					}
					if early := time.Until(a.At); early > 0 {
						t.Errorf("Admit returned %v before its instant", early)
					}
					a.Release()
					mu.Lock()
					calls = append(calls, throttle.Call{At: a.At, Cost: 1})
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(calls) != 30 {
		t.Fatalf("%d admissions, want 30", len(calls))
	}
	checkCalls(t, rules, calls)
}

// Many processes reserving at once never exceed a rule as a server that
// enforces it exactly on arrival sees it, with a margin for the trip
// (generous: under -race on a loaded machine the trip varies by tens of
// milliseconds).
func TestLiveReserveStrictServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const rules = "5/100ms,12/400ms"
	strict, err := strictserver.New(strictserver.Options{Rules: mustRules(t, rules)})
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(strict)
	defer api.Close()
	client := api.Client()
	var ls []*redisrate.Limiter
	for range 4 {
		ls = append(ls, liveOpen(t, liveClient(t, srv.Addr()), "strict", rules, redisrate.Options{Margin: 60 * time.Millisecond}))
	}
	var wg sync.WaitGroup
	for _, l := range ls {
		for range 3 {
			wg.Go(func() {
				for range 3 {
					a, err := l.Admit(context.Background(), 1)
					if err != nil {
						t.Error(err)
						return
					}
					resp, err := client.Get(api.URL + "/x")
					a.Release()
					if err != nil {
						t.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						t.Errorf("the strict server answered %s", resp.Status)
					}
				}
			})
		}
	}
	wg.Wait()
	if s := strict.Stats(); s.Accepted != 36 || s.Refused != 0 {
		t.Errorf("strict server: %+v, want 36 accepted, none refused", s)
	}
}
