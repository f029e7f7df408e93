package redisrate_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// losses records what OnLoss hears.
type losses struct {
	mu   sync.Mutex
	seen []redisrate.Loss
}

func (o *losses) report(e redisrate.Loss) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, e)
}

func (o *losses) get() []redisrate.Loss {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]redisrate.Loss(nil), o.seen...)
}

// Redis that forgets a quota in use (FLUSHALL here; a restart without
// persistence, an eviction, a failover to a lagging replica do the same)
// forgets the calls of its last window, and the fleet may then go over a
// rule. That went unsaid: now the admission that finds the quota gone,
// less than its longest window after this process recorded a call in it,
// reports the loss, once, with the calls it recorded again (see
// live_repair_test.go). A quota that expired unused (its window passed)
// is no loss.
func TestLiveLossReported(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	var heard losses
	l := liveOpen(t, liveClient(t, srv.Addr()), "lost", "30/m,2/300ms", redisrate.Options{OnLoss: heard.report})
	first, err := l.Admit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := heard.get(); len(got) != 0 {
		t.Fatalf("OnLoss heard %+v at the first admission, want nothing (no call recorded before)", got)
	}
	do(t, srv, "FLUSHALL")
	a, err := l.Admit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := heard.get()
	if len(got) != 1 {
		t.Fatalf("OnLoss heard %+v after FLUSHALL, want one loss", got)
	}
	if e := got[0]; !e.Last.Equal(first.At) || e.At.Before(first.At) || e.At.After(a.At) || e.Window != time.Minute || e.Restored != 1 {
		t.Errorf("Loss = %+v, want Last %v (the call recorded before), At between it and %v (the admission after the repair), Window 1m, 1 call restored",
			e, first.At, a.At)
	}
	// The quota is kept again: nothing more to report.
	if _, err := l.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := heard.get(); len(got) != 1 {
		t.Errorf("OnLoss heard %+v, want the one loss only", got)
	}

	// Redis that drops a rule's log but keeps the rule set (an eviction
	// takes the keys with the shortest time to live first): the log no
	// longer holds this process's call of a moment ago. That is a loss too.
	if _, err := l.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var log string
	for _, k := range l.Keys() {
		if strings.HasSuffix(k, ":2/300ms") {
			log = k
		}
	}
	if log == "" {
		t.Fatalf("no key of rule 2/300ms in %q", l.Keys())
	}
	do(t, srv, "DEL", log)
	if _, err := l.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := heard.get(); len(got) != 2 {
		t.Errorf("OnLoss heard %+v after the log of 2/300ms was dropped, want a second loss", got)
	}

	// A quota that expired unused is no loss: its keys live as long as
	// its longest window.
	var quiet losses
	short := liveOpen(t, liveClient(t, srv.Addr()), "short", "2/200ms", redisrate.Options{OnLoss: quiet.report})
	if _, err := short.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the quota to expire", 5*time.Second, func() bool { return do(t, srv, "EXISTS", "pace:{short}:rules") == "0" })
	if _, err := short.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := quiet.get(); len(got) != 0 {
		t.Errorf("OnLoss heard %+v after the quota expired unused, want nothing", got)
	}
}

// movableClock is a client whose clock, the only instant the limiter
// sends Redis (used only where TIME is refused), can be moved.
type movableClock struct {
	redisrate.Client
	skew atomic.Int64 // ns
}

func (c *movableClock) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return skewedClient{c.Client, time.Duration(c.skew.Load())}.EvalSha(ctx, sha, keys, args...)
}

func (c *movableClock) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	return skewedClient{c.Client, time.Duration(c.skew.Load())}.Eval(ctx, src, keys, args...)
}

// The store's clock decides, and it may step back (a clock set back, a
// failover to a server whose clock lags): the calls recorded then lie in
// its future, and Redis asks the next call to wait out the step as well
// as the window. pace slept the whole step (an hour here) even when the
// clock was put right a moment later. A wait is now never longer than the
// longest window plus the margin: pace asks again by then, and Redis,
// whose clock is right again, admits the call. Nothing is admitted early.
func TestLiveClockStepsBack(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--rename-command", "TIME", "")
	c := &movableClock{Client: liveClient(t, srv.Addr())}
	l := liveOpen(t, c, "clock", "2/500ms", redisrate.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 {
		if _, err := l.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	c.skew.Store(int64(-time.Hour))
	done := make(chan error, 1)
	go func() {
		_, err := l.Admit(ctx, 1)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Admit with the clock an hour back = %v before it was put right, want a wait", err)
	case <-time.After(200 * time.Millisecond):
	}
	c.skew.Store(0)
	start := time.Now()
	if err := <-done; err != nil {
		t.Fatalf("Admit once the clock was put right = %v, want an admission within the window (500ms)", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("admitted %v after the clock was put right, want within about the window (500ms)", d)
	}
}

// A Redis that refuses TIME in scripts (renamed, or an ACL without it, as
// some managed services and proxies have it) makes every process decide
// on its own clock: the machines sharing the quota must then keep their
// clocks in sync, or one whose clock runs ahead lets the fleet over a
// rule. That went unsaid (Stats only counted it). Now OnClientClock is
// called once, at the first admission so decided; never where TIME works.
func TestLiveClientClockReported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		extra []string
		want  int
	}{
		{"time refused", []string{"--rename-command", "TIME", ""}, 1},
		{"time allowed", nil, 0},
	} {
		srv := redistest.Start(t, tt.extra...)
		var heard atomic.Int64
		l := liveOpen(t, liveClient(t, srv.Addr()), "clock", "5/s", redisrate.Options{OnClientClock: func() { heard.Add(1) }})
		for range 3 {
			if _, err := l.Admit(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
		if n := heard.Load(); n != int64(tt.want) {
			t.Errorf("%s: OnClientClock called %d times in 3 admissions, want %d", tt.name, n, tt.want)
		}
	}
}
