package throttle_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/throttletest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mustNew(t *testing.T, spec string, opts ...Option) *Limiter {
	t.Helper()
	rules, err := ParseRules(spec)
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(rules, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// allowStep is a row of a limiter step table: at t0+at, DelayAt must
// report wait, and AllowAt must agree (recording the call when wait is 0).
type allowStep struct {
	at   time.Duration
	wait time.Duration
}

func runAllowSteps(t *testing.T, l *Limiter, steps []allowStep) {
	t.Helper()
	for i, s := range steps {
		at := t0.Add(s.at)
		if got := l.DelayAt(at); got != s.wait {
			t.Fatalf("step %d: DelayAt(t0+%v) = %v, want %v", i, s.at, got, s.wait)
		}
		if got, want := l.AllowAt(at), s.wait == 0; got != want {
			t.Fatalf("step %d: AllowAt(t0+%v) = %v, want %v", i, s.at, got, want)
		}
	}
}

func TestLimiterSeveralRules(t *testing.T) {
	clock := throttletest.NewFakeClock(t0)
	l := mustNew(t, "2/s,3/10s", WithClock(clock))
	ms := time.Millisecond
	runAllowSteps(t, l, []allowStep{
		{0, 0}, {0, 0}, // 2/s full
		{500 * ms, 500 * ms},                // 2/s binds
		{1000 * ms, 0},                      // 3/10s now full: calls at 0, 0, 1s
		{1000 * ms, 9000 * ms},              // both bind; 3/10s is longer
		{2000 * ms, 8000 * ms},              // 2/s would allow, 3/10s does not
		{10 * time.Second, 0},               // the two calls at 0 leave 3/10s
		{10 * time.Second, 0},               // 2/s: window (9s,10s] holds one
		{10 * time.Second, 1000 * ms},       // 2/s full again
		{11 * time.Second, 0},               // (1s,11s] holds 10s,10s: the call at 1s has just left
		{11 * time.Second, 9 * time.Second}, // 3/10s full with 10s,10s,11s
	})
}

func TestLimiterMargin(t *testing.T) {
	clock := throttletest.NewFakeClock(t0)
	l := mustNew(t, "1/s", WithClock(clock), WithMargin(50*time.Millisecond))
	runAllowSteps(t, l, []allowStep{
		{0, 0},
		{time.Second, 50 * time.Millisecond}, // the window is 1.05s
		{1050 * time.Millisecond, 0},
		{2050 * time.Millisecond, 50 * time.Millisecond},
	})
	if got := l.Margin(); got != 50*time.Millisecond {
		t.Errorf("Margin() = %v", got)
	}
}

func TestLimiterCounterRule(t *testing.T) {
	clock := throttletest.NewFakeClock(t0)
	// WithCounterAbove(0): the 4/1024ms rule is kept by a counter with 1ms buckets.
	l := mustNew(t, "4/1024ms", WithClock(clock), WithCounterAbove(0))
	ms := time.Millisecond
	runAllowSteps(t, l, []allowStep{
		{0, 0}, {100 * ms, 0}, {200 * ms, 0}, {300 * ms, 0},
		// Bucket [0,1ms) stops overlapping (t-1024ms, t] at 1ms+1024ms-1ns, 1ns
		// before its whole width has passed: the counter may lose up to one bucket.
		{400 * ms, 625*ms - 1},
	})
	if k := WindowKinds(l); k[0] != "counter" {
		t.Fatalf("rule kept by a %s, want a counter", k[0])
	}
	big := mustNew(t, "1000000/d,10/s", WithClock(clock))
	if k := WindowKinds(big); k[0] != "counter" || k[1] != "log" {
		t.Errorf("1000000/d,10/s kept by %v, want [counter log]", k)
	}
}

func TestLimiterClockBackwards(t *testing.T) {
	clock := throttletest.NewFakeClock(t0)
	l := mustNew(t, "1/s", WithClock(clock))
	if !l.Allow() {
		t.Fatal("first Allow() = false")
	}
	// The clock steps back an hour: the limiter holds its timeline at the
	// last instant it saw, so nothing is admitted early...
	clock.Set(t0.Add(-time.Hour))
	if l.Allow() {
		t.Fatal("Allow() after the clock stepped back = true, want false")
	}
	if got := l.DelayAt(clock.Now()); got != time.Second {
		t.Errorf("DelayAt after the step back = %v, want 1s", got)
	}
	// ...and nothing stalls for the hour: one second later it admits again.
	clock.Advance(time.Second)
	if !l.Allow() {
		t.Error("Allow() one second after the step back = false, want true")
	}
	if l.Allow() {
		t.Error("second Allow() in the same second = true")
	}
}

func TestLimiterWaitOnFakeClock(t *testing.T) {
	clock := throttletest.NewFakeClock(t0)
	l := mustNew(t, "1/s", WithClock(clock))
	ctx := context.Background()
	if err := l.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx) }()
	clock.BlockUntilTimers(1)
	if next, _ := clock.Next(); !next.Equal(t0.Add(time.Second)) {
		t.Errorf("waiter sleeps until %v, want t0+1s", next.Sub(t0))
	}
	clock.Advance(999 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v before the window passed", err)
	default:
	}
	clock.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := l.Stats()
	if s.Admitted != 2 || s.Waited != 1 || s.TotalWait != time.Second {
		t.Errorf("Stats: admitted %d waited %d total %v; want 2, 1, 1s", s.Admitted, s.Waited, s.TotalWait)
	}
	if r := s.Rules[0]; r.Waits != 1 || r.WaitTime != time.Second || r.Used != 1 || r.PeakUsage != 1 {
		t.Errorf("RuleStats = %+v; want 1 wait of 1s, 1 used, peak 1", r)
	}
	if s.Binding != 0 {
		t.Errorf("Binding = %d, want 0", s.Binding)
	}
}

func TestLimiterPause(t *testing.T) {
	clock := throttletest.NewFakeClock(t0)
	l := mustNew(t, "10/s", WithClock(clock))
	l.PauseUntil(t0.Add(3*time.Second), "429 Retry-After")
	l.PauseUntil(t0.Add(time.Second), "shorter") // never shortens
	if got := l.DelayAt(t0); got != 3*time.Second {
		t.Fatalf("DelayAt during pause = %v, want 3s", got)
	}
	done := make(chan error, 1)
	go func() { done <- l.Wait(context.Background()) }()
	clock.BlockUntilTimers(1)
	clock.Advance(3 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := l.Stats()
	if s.Pauses != 1 || s.PauseWaits != 1 || s.PausedFor != 3*time.Second || s.PauseReason != "429 Retry-After" {
		t.Errorf("pause stats = %d pauses, %d waits, %v, %q", s.Pauses, s.PauseWaits, s.PausedFor, s.PauseReason)
	}
	if s.Rules[0].Waits != 0 {
		t.Errorf("rule charged %d waits for a pause", s.Rules[0].Waits)
	}
}

func TestLimiterSeed(t *testing.T) {
	clock := throttletest.NewFakeClock(t0)
	l := mustNew(t, "3/d,2/h", WithClock(clock))
	// An earlier run admitted calls 23h, 30m and 10m ago, and one two days ago.
	err := l.Seed([]time.Time{t0.Add(-10 * time.Minute), t0.Add(-48 * time.Hour), t0.Add(-23 * time.Hour), t0.Add(-30 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	// 3/d is full until the call 23h ago leaves, in 1h.
	if got := l.DelayAt(t0); got != time.Hour {
		t.Errorf("DelayAt after Seed = %v, want 1h", got)
	}
	clock.Advance(time.Hour)
	if !l.Allow() {
		t.Error("Allow() once the old call left = false")
	}
	if err := l.Seed([]time.Time{t0}); err == nil {
		t.Error("Seed after an admission succeeded, want an error")
	}
}

func TestNewRejectsBadRules(t *testing.T) {
	for _, r := range []Rule{{0, time.Second}, {1, 0}, {-1, time.Second}, {1, -time.Second}} {
		if _, err := New([]Rule{r}); !errors.Is(err, ErrInvalidRule) {
			t.Errorf("New(%#v) error = %v, want ErrInvalidRule", r, err)
		}
	}
}

func TestLimiterNoRules(t *testing.T) {
	l, err := New(nil, WithClock(throttletest.NewFakeClock(t0)))
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if !l.Allow() {
			t.Fatal("Allow() = false with no rules")
		}
	}
	if s := l.Stats(); s.Binding != -1 || s.Admitted != 1000 {
		t.Errorf("Stats = %+v", s)
	}
}
