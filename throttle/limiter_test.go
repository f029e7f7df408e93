package throttle_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	. "github.com/pace-cli/pace/throttle"
)

// Every test here runs in a synctest bubble: time.Now and timers are fake,
// time moves only when every goroutine in the bubble is blocked, so no test
// sleeps for real and instants are exact. A bubble's clock starts at
// midnight UTC, 2000-01-01.

func mustNew(t *testing.T, spec string, opts ...Options) *Limiter {
	t.Helper()
	rules, err := ParseRules(spec)
	if err != nil {
		t.Fatal(err)
	}
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Rules = rules
	l, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// allowStep is a row of a limiter step table: at t0+at, DelayN(cost) must
// report wait, and AllowN must agree (recording the call when wait is 0).
// cost 0 means 1.
type allowStep struct {
	at   time.Duration
	wait time.Duration
	cost int
}

func runAllowSteps(t *testing.T, l *Limiter, t0 time.Time, steps []allowStep) {
	t.Helper()
	for i, s := range steps {
		at, cost := t0.Add(s.at), max(s.cost, 1)
		if got := l.DelayN(at, cost); got != s.wait {
			t.Fatalf("step %d: DelayN(t0+%v, %d) = %v, want %v", i, s.at, cost, got, s.wait)
		}
		if got, want := allowN(l, at, cost), s.wait == 0; got != want {
			t.Fatalf("step %d: AllowN(t0+%v, %d) = %v, want %v", i, s.at, cost, got, want)
		}
	}
}

func TestLimiterSeveralRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := mustNew(t, "2/s,3/10s")
		ms := time.Millisecond
		runAllowSteps(t, l, t0, []allowStep{
			{at: 0}, {at: 0}, // 2/s full
			{at: 500 * ms, wait: 500 * ms},                // 2/s binds
			{at: 1000 * ms},                               // 3/10s now full: calls at 0, 0, 1s
			{at: 1000 * ms, wait: 9000 * ms},              // both bind; 3/10s is longer
			{at: 2000 * ms, wait: 8000 * ms},              // 2/s would allow, 3/10s does not
			{at: 10 * time.Second},                        // the two calls at 0 leave 3/10s
			{at: 10 * time.Second},                        // 2/s: window (9s,10s] holds one
			{at: 10 * time.Second, wait: 1000 * ms},       // 2/s full again
			{at: 11 * time.Second},                        // (1s,11s] holds 10s,10s: the call at 1s has just left
			{at: 11 * time.Second, wait: 9 * time.Second}, // 3/10s full with 10s,10s,11s
		})
	})
}

func TestLimiterCostRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		// 3 calls per second AND 100 cost per second.
		l := mustNew(t, "3/s,cost:100/s")
		ms := time.Millisecond
		runAllowSteps(t, l, t0, []allowStep{
			{at: 0, cost: 60},
			{at: 0, cost: 40},                           // 100: at the cost limit
			{at: 100 * ms, cost: 1, wait: 900 * ms},     // cost binds
			{at: 1000 * ms, cost: 90},                   // both calls of 0 have left
			{at: 1000 * ms, cost: 10},                   // 100 again, 2 calls
			{at: 1000 * ms, cost: 1, wait: time.Second}, // cost binds, not 3/s
			{at: 2000 * ms, cost: 1},
			{at: 2000 * ms, cost: 1},
			{at: 2000 * ms, cost: 1},
			{at: 2000 * ms, cost: 1, wait: time.Second}, // 3/s binds at a cost of 3
		})
		ctx := context.Background()
		for _, cost := range []int{0, -1, 101} {
			if err := waitN(l, ctx, cost); !errors.Is(err, ErrBadCost) {
				t.Errorf("Admit(ctx, %d) = %v, want ErrBadCost", cost, err)
			}
			if _, err := l.Admit(ctx, cost); !errors.Is(err, ErrBadCost) {
				t.Errorf("Admit(ctx, %d) = %v, want ErrBadCost", cost, err)
			}
		}
		if got := MaxCost(rulesOf(l)); got != 100 {
			t.Errorf("MaxCost = %d, want 100", got)
		}
		// A count rule alone takes any cost, counted as 1.
		c := mustNew(t, "1/s")
		if !allowN(c, time.Now(), 1_000_000) {
			t.Error("a count rule refused a costly call")
		}
	})
}

func TestLimiterMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := mustNew(t, "1/s", Options{Margin: 50 * time.Millisecond})
		runAllowSteps(t, l, t0, []allowStep{
			{at: 0},
			{at: time.Second, wait: 50 * time.Millisecond}, // the window is 1.05s
			{at: 1050 * time.Millisecond},
			{at: 2050 * time.Millisecond, wait: 50 * time.Millisecond},
		})
		if got := l.Stats().Margin; got != 50*time.Millisecond {
			t.Errorf("Margin() = %v", got)
		}
		l.SetMargin(0)
		if got := l.DelayN(t0.Add(2050*time.Millisecond), 1); got != 0 {
			t.Errorf("DelayN after SetMargin(0) = %v, want 0", got)
		}
		if got := l.Stats().Margin; got != 0 {
			t.Errorf("Stats().Margin = %v, want 0", got)
		}
	})
}

// A narrower margin frees room at once: the head of the queue, asleep on
// the wider window, is woken.
func TestLimiterNarrowerMarginWakesTheHead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l := mustNew(t, "1/s", Options{Margin: time.Second})
		allowN(l, time.Now(), 1)
		done := make(chan time.Duration, 1)
		go func() {
			if err := waitN(l, context.Background(), 1); err != nil {
				panic(err)
			}
			done <- time.Since(start)
		}()
		time.Sleep(1500 * time.Millisecond)
		l.SetMargin(0)
		if got := <-done; got != 1500*time.Millisecond {
			t.Errorf("admitted at %v, want 1.5s (when the margin narrowed)", got)
		}
	})
}

func TestLimiterCounterRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		// WithCounterAbove(0): the 4/1024ms rule is kept by a counter with 1ms buckets.
		l := mustNew(t, "4/1024ms", Options{CounterAbove: -1})
		ms := time.Millisecond
		runAllowSteps(t, l, t0, []allowStep{
			{at: 0}, {at: 100 * ms}, {at: 200 * ms}, {at: 300 * ms},
			// Bucket [0,1ms) stops overlapping (t-1024ms, t] at 1ms+1024ms-1ns, 1ns
			// before its whole width has passed: the counter may lose up to one bucket.
			{at: 400 * ms, wait: 625*ms - 1},
		})
		if k := WindowKinds(l); k[0] != "counter" {
			t.Fatalf("rule kept by a %s, want a counter", k[0])
		}
		big := mustNew(t, "1000000/d,10/s")
		if k := WindowKinds(big); k[0] != "counter" || k[1] != "log" {
			t.Errorf("1000000/d,10/s kept by %v, want [counter log]", k)
		}
	})
}

// An instant earlier than one the limiter has seen is taken as that one
// for that call only. (It used to be taken as a clock step that shifted
// the timeline for good, after which 2/s admitted 4 calls in 200ms.)
func TestLimiterInstantInThePast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := mustNew(t, "2/s")
		ms := time.Millisecond
		runAllowSteps(t, l, t0, []allowStep{
			{at: 0}, {at: 0},
			{at: -time.Hour, wait: time.Second}, // taken as t0: full
			{at: 100 * ms, wait: 900 * ms},
			{at: 200 * ms, wait: 800 * ms},
			{at: -time.Minute, wait: 800 * ms}, // taken as t0+200ms
			{at: time.Second},
		})
		if s := l.Stats(); s.Admitted != 3 {
			t.Errorf("admitted %d calls, want 3", s.Admitted)
		}
	})
}

func TestLimiterWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, "1/s")
		ctx := context.Background()
		if err := waitN(l, ctx, 1); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- waitN(l, ctx, 1) }()
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Wait returned %v before the window passed", err)
		default:
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("Wait still blocked once the window passed")
		}
		s := l.Stats()
		if s.Admitted != 2 || s.Waits != 1 || s.WaitTime != time.Second {
			t.Errorf("Stats: admitted %d, waits %d, wait time %v; want 2, 1, 1s", s.Admitted, s.Waits, s.WaitTime)
		}
		if r := s.Rules[0]; r.Waits != 1 || r.WaitTime != time.Second || r.Used != 1 || r.PeakUsage != 1 {
			t.Errorf("RuleStats = %+v; want 1 wait of 1s, 1 used, peak 1", r)
		}
		if b := s.Busiest(); b != 0 {
			t.Errorf("Busiest() = %d, want 0", b)
		}
	})
}

func TestLimiterAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l := mustNew(t, "1/s", Options{MaxInFlight: 1})
		ctx := context.Background()
		a, err := l.Admit(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !a.At.Equal(start) || a.Waited != 0 || a.Cost != 1 {
			t.Errorf("first admission = {At: %v, Waited: %v, Cost: %d}, want {start, 0, 1}", a.At.Sub(start), a.Waited, a.Cost)
		}
		done := make(chan Admission, 1)
		go func() {
			b, err := l.Admit(ctx, 1)
			if err != nil {
				panic(err)
			}
			done <- b
		}()
		time.Sleep(300 * time.Millisecond) // the call takes 300ms, then its slot frees
		a.Release()
		a.Release() // idempotent
		b := <-done
		if got := b.At.Sub(start); got != time.Second {
			t.Errorf("second admission at %v, want 1s", got)
		}
		if b.Waited != time.Second {
			t.Errorf("second admission waited %v, want 1s", b.Waited)
		}
		b.Release()
		if s := l.Stats(); s.InFlight != 0 || s.SlotWaits != 1 || s.SlotWaitTime != 300*time.Millisecond {
			t.Errorf("slots: in flight %d, waits %d, wait time %v; want 0, 1, 300ms", s.InFlight, s.SlotWaits, s.SlotWaitTime)
		}
	})
}

// A corrected cost moves the rule: lower frees room at once (waking the
// head of the queue), higher makes later calls wait for the true costs.
func TestAdmissionCorrect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l := mustNew(t, "cost:100/s")
		ctx := context.Background()
		a, err := l.Admit(ctx, 90) // an estimate
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan time.Duration, 1)
		go func() {
			if err := waitN(l, ctx, 50); err != nil {
				panic(err)
			}
			done <- time.Since(start)
		}()
		time.Sleep(200 * time.Millisecond)
		if err := a.Correct(context.Background(), 30); err != nil { // it really cost 30
			t.Fatal(err)
		}
		if got := <-done; got != 200*time.Millisecond {
			t.Errorf("waiter admitted at %v, want 200ms (when the cost was corrected)", got)
		}
		// The call of 50 really cost 90: 30+90 = 120 > 100 is past undoing,
		// but nothing more fits until the window holds at most 100-1.
		b, err := l.Admit(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Correct(context.Background(), 70); err != nil { // 30 + 50 + 70 = 150
			t.Fatal(err)
		}
		if got := l.DelayN(time.Now(), 1); got != time.Second {
			t.Errorf("DelayN after raising a cost = %v, want 1s (until the 30 of 0s and the 50 of 200ms leave)", got)
		}
		if s := l.Stats(); s.Rules[0].PeakUsage != 1.5 {
			t.Errorf("PeakUsage = %v, want 1.5: the run went over, and the stats must say so", s.Rules[0].PeakUsage)
		}
		if err := b.Correct(context.Background(), 0); !errors.Is(err, ErrBadCost) {
			t.Errorf("Correct(0) = %v, want ErrBadCost", err)
		}
	})
}

// TestAdmissionCorrectCopies: whichever copy of an admission corrects,
// the call counts what the last correction said, in a log and in a
// counter (which keeps only sums, and is given the cost last recorded).
func TestAdmissionCorrectCopies(t *testing.T) {
	type step struct {
		copy bool // on the copy made at admission, else on the admission
		cost int
	}
	for _, kind := range []struct {
		name         string
		counterAbove int
	}{{"log", 0}, {"counter", -1}} {
		for _, tc := range []struct {
			name  string
			cost  int
			steps []step
		}{
			// The hostile pass's sequence: 16 counted in memory, 9 in the stores.
			{"down twice, up twice", 5, []step{{false, 1}, {true, 1}, {false, 9}, {true, 9}}},
			{"a copy raises after a lowering", 5, []step{{false, 1}, {true, 9}}},
			{"a copy lowers after a raise", 5, []step{{false, 9}, {true, 1}}},
			{"a copy lowers twice", 6, []step{{false, 4}, {true, 4}, {true, 2}}},
			{"a copy restores the admitted cost", 5, []step{{false, 1}, {true, 5}}},
		} {
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				l := mustNew(t, "cost:10/s", Options{CounterAbove: kind.counterAbove})
				t0 := time.Now()
				a, ok := l.AllowN(t0, tc.cost)
				if !ok {
					t.Fatalf("AllowN(t0, %d) = false", tc.cost)
				}
				c := a
				for _, s := range tc.steps {
					p := &a
					if s.copy {
						p = &c
					}
					if err := p.Correct(context.Background(), s.cost); err != nil {
						t.Fatal(err)
					}
				}
				want := tc.steps[len(tc.steps)-1].cost
				if got := l.Stats().Rules[0].Used; got != want {
					t.Errorf("Used = %d, want %d (the last correction)", got, want)
				}
				if d := l.DelayN(t0, 10-want); d != 0 {
					t.Errorf("DelayN(t0, %d) = %v, want 0", 10-want, d)
				}
				if d := l.DelayN(t0, 10-want+1); d == 0 {
					t.Errorf("DelayN(t0, %d) = 0, want a wait: the call counts %d", 10-want+1, want)
				}
			})
		}
	}
}

// TestLimiterCorrectionsKeepNothing: a limiter keeps nothing per call
// corrected, so its memory does not grow with the calls corrected in a
// window. It kept the cost of each for a counter of a cost rule, for a
// window: a day's rule under pace fetch --cost-from-response, every call
// corrected, held millions of entries. Here 100,000 calls in a day's
// window, each corrected, grew the live heap by some 3 MB; the bound
// allows a third of that for whatever else the runtime keeps.
func TestLimiterCorrectionsKeepNothing(t *testing.T) {
	const calls = 100_000
	l := mustNew(t, "cost:1000000000/d") // kept by a counter
	t0 := time.Now()
	before := liveHeap()
	for k := range calls {
		a, ok := l.AllowN(t0.Add(time.Duration(k)*time.Microsecond), 2)
		if !ok {
			t.Fatalf("AllowN(t0+%dus, 2) = false", k)
		}
		if err := a.Correct(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		a.Release()
	}
	if grown := int64(liveHeap()) - int64(before); grown > 1<<20 {
		t.Errorf("the live heap grew by %d bytes over %d calls corrected, want nothing kept per call", grown, calls)
	}
	if got := l.Stats().Rules[0].Used; got != calls {
		t.Errorf("Used = %d, want %d (each call corrected to 1)", got, calls)
	}
}

// liveHeap returns the bytes of the objects the heap holds alive.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestAdmissionAllocs: an admission takes one small cell, shared by its
// copies, only under a cost rule kept by a counter (the cost last
// recorded, which the counter's correction needs), from a slab of 64,
// and nothing otherwise;
// a correction with no caller waiting allocates nothing (it made a new
// channel to wake a head of the queue there was not).
func TestAdmissionAllocs(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want float64
	}{
		{"1000/s", 0},
		{"1000000000/d", 0},
		{"cost:10000/s", 0}, // a log keeps each call's cost
		// The cells come 64 to an allocation: 100 runs make 2 or 3,
		// which AllocsPerRun's integer average reports as 0.
		{"1000/s,cost:1000000000/d", 0},
	} {
		l := mustNew(t, tc.spec)
		ctx := context.Background()
		got := testing.AllocsPerRun(100, func() {
			a, err := l.Admit(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Correct(ctx, 2); err != nil {
				t.Fatal(err)
			}
			a.Release()
		})
		if got != tc.want {
			t.Errorf("%s: Admit, Correct and Release allocate %v times, want %v", tc.spec, got, tc.want)
		}
	}
}

func TestLimiterPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := mustNew(t, "10/s")
		l.PauseUntil(t0.Add(3*time.Second), "429 Retry-After")
		l.PauseUntil(t0.Add(time.Second), "shorter") // never shortens
		if got := l.DelayN(t0, 1); got != 3*time.Second {
			t.Fatalf("DelayN during pause = %v, want 3s", got)
		}
		if err := waitN(l, context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(t0); got != 3*time.Second {
			t.Errorf("admitted after %v, want 3s", got)
		}
		s := l.Stats()
		if s.Pauses != 1 || s.PauseWaits != 1 || s.PauseWaitTime != 3*time.Second || s.PauseReason != "429 Retry-After" {
			t.Errorf("pause stats = %d pauses, %d waits, %v, %q", s.Pauses, s.PauseWaits, s.PauseWaitTime, s.PauseReason)
		}
		if !s.PausedUntil.Equal(t0.Add(3 * time.Second)) {
			t.Errorf("PausedUntil = t0+%v, want t0+3s", s.PausedUntil.Sub(t0))
		}
		if s.Rules[0].Waits != 0 {
			t.Errorf("rule charged %d waits for a pause", s.Rules[0].Waits)
		}
	})
}

func TestLimiterSeed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := mustNew(t, "3/d,2/h,cost:10/h")
		// An earlier run admitted calls 23h, 30m and 10m ago, and one two days ago.
		err := l.Seed([]Call{
			{At: t0.Add(-10 * time.Minute), Cost: 4},
			{At: t0.Add(-48 * time.Hour), Cost: 1},
			{At: t0.Add(-23 * time.Hour), Cost: 1},
			{At: t0.Add(-30 * time.Minute), Cost: 5},
		})
		if err != nil {
			t.Fatal(err)
		}
		// 3/d is full until the call 23h ago leaves, in 1h.
		if got := l.DelayN(t0, 1); got != time.Hour {
			t.Errorf("DelayN after Seed = %v, want 1h", got)
		}
		if s := l.Stats(); s.Rules[2].Used != 9 {
			t.Errorf("cost rule holds %d after Seed, want 9", s.Rules[2].Used)
		}
		time.Sleep(time.Hour)
		if !allowN(l, time.Now(), 1) {
			t.Error("Allow() once the old call left = false")
		}
		if err := l.Seed([]Call{{At: t0, Cost: 1}}); err == nil {
			t.Error("Seed after an admission succeeded, want an error")
		}
	})
}

func TestLimiterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, "1/h")
		allowN(l, time.Now(), 1)
		errs := make(chan error, 2)
		for range 2 {
			go func() { errs <- waitN(l, context.Background(), 1) }()
		}
		synctest.Wait()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := <-errs; !errors.Is(err, ErrClosed) {
				t.Errorf("Wait after Close = %v, want ErrClosed", err)
			}
		}
		if _, err := l.Admit(context.Background(), 1); !errors.Is(err, ErrClosed) {
			t.Errorf("Admit after Close = %v, want ErrClosed", err)
		}
	})
}

func TestNewRejectsBadRules(t *testing.T) {
	for _, r := range []Rule{{N: 0, Window: time.Second}, {N: 1}, {N: -1, Window: time.Second}, {N: 1, Window: -time.Second}} {
		if _, err := New(Options{Rules: []Rule{r}}); !errors.As(err, new(*RuleError)) {
			t.Errorf("New(Options{Rules: %#v}) error = %v, want a *RuleError", r, err)
		}
	}
}

func TestLimiterNoRules(t *testing.T) {
	l, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if !allowN(l, time.Now(), 1) {
			t.Fatal("Allow() = false with no rules")
		}
	}
	if s := l.Stats(); s.Busiest() != -1 || s.Admitted != 1000 {
		t.Errorf("Stats = %+v", s)
	}
}

// The in-memory limiter satisfies the contract every backend does.
var _ Backend = (*Limiter)(nil)

// FIFO: a costly call at the head holds cheaper ones behind it until its
// whole cost fits. WithReorder lets a call that fits go first.
func TestLimiterReorder(t *testing.T) {
	for _, reorder := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			l := mustNew(t, "cost:10/s", Options{Reorder: reorder})
			allowN(l, start, 6)
			admittedAt := func(cost int) <-chan time.Duration {
				c := make(chan time.Duration, 1)
				go func() {
					if err := waitN(l, context.Background(), cost); err != nil {
						panic(err)
					}
					c <- time.Since(start)
				}()
				synctest.Wait()
				return c
			}
			big := admittedAt(8)   // needs the 6 to leave: at 1s
			small := admittedAt(3) // fits now (6+3), unless it must wait behind the 8
			gotSmall, gotBig := <-small, <-big
			// FIFO: the 8 at 1s, then the 3 once the 8 leaves room: 2s.
			// Reordered: the 3 at once; the 8 when the 6 and the 3 have left: 1s.
			wantSmall, wantBig := 2*time.Second, time.Second
			if reorder {
				wantSmall = 0
			}
			if gotBig != wantBig || gotSmall != wantSmall {
				t.Errorf("reorder %v: 8 admitted at %v, 3 at %v; want %v and %v", reorder, gotBig, gotSmall, wantBig, wantSmall)
			}
		})
	}
}

// rulesOf returns l's rules, as its Stats list them.
func rulesOf(l *Limiter) []Rule {
	var rules []Rule
	for _, r := range l.Stats().Rules {
		rules = append(rules, r.Rule)
	}
	return rules
}

// A margin past a century (a direct SetMargin, or Options.Margin) is kept
// as a century: widened by more, a window overflowed into a negative width
// that held no call, and every call was admitted; a counter's ring
// panicked in New.
func TestLimiterHugeMarginStillLimits(t *testing.T) {
	for _, counter := range []bool{false, true} {
		above := 0
		if counter {
			above = -1
		}
		t0 := time.Now()
		l, err := New(Options{Rules: []Rule{{N: 1, Window: time.Second}}, Margin: math.MaxInt64, CounterAbove: above})
		if err != nil {
			t.Fatal(err)
		}
		if !allowN(l, t0, 1) {
			t.Fatalf("counter=%v: the first call was refused", counter)
		}
		if allowN(l, t0.Add(time.Hour), 1) {
			t.Errorf("counter=%v: a second call an hour later was admitted under 1/s with a century's margin", counter)
		}
		l.SetMargin(math.MaxInt64)
		if allowN(l, t0.Add(2*time.Hour), 1) {
			t.Errorf("counter=%v: SetMargin(MaxInt64) let a second call in", counter)
		}
	}
}

// A cost corrected (or seeded) far past any limit counts as MaxLimit: the
// sums wrapped around to negative before, and every later call went in.
func TestLimiterHugeCostStillLimits(t *testing.T) {
	ctx := context.Background()
	for _, spec := range []string{"cost:10/h", "cost:10/h,cost:2000000/h"} {
		l := mustNew(t, spec)
		a, err := l.Admit(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Correct(context.Background(), math.MaxInt); err != nil {
			t.Fatal(err)
		}
		if a.Cost != MaxLimit {
			t.Errorf("%s: Correct(MaxInt) left Cost %d, want MaxLimit", spec, a.Cost)
		}
		if allowN(l, time.Now(), 1) {
			t.Errorf("%s: a call was admitted after a cost was corrected to MaxInt", spec)
		}
		if u := l.Stats().Rules[0].Used; u < 10 {
			t.Errorf("%s: the rule holds %d, want it full", spec, u)
		}

		s := mustNew(t, spec)
		if err := s.Seed([]Call{{At: time.Now(), Cost: math.MaxInt}, {At: time.Now(), Cost: 5}}); err != nil {
			t.Fatal(err)
		}
		if allowN(s, time.Now(), 1) {
			t.Errorf("%s: a call was admitted after a seed of cost MaxInt", spec)
		}
	}
}

// Close wakes a caller waiting for an in-flight slot, and a later Admit
// fails at once instead of waiting for a slot that never comes.
func TestLimiterCloseWakesSlotWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, err := New(Options{MaxInFlight: 1})
		if err != nil {
			t.Fatal(err)
		}
		held, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 1)
		go func() { errs <- waitN(l, context.Background(), 1) }()
		synctest.Wait()
		l.Close()
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Errorf("a slot waiter after Close got %v, want ErrClosed", err)
		}
		if _, err := l.Admit(context.Background(), 1); !errors.Is(err, ErrClosed) {
			t.Errorf("Admit after Close with no slot free = %v, want ErrClosed", err)
		}
		held.Release()
		if s := l.Stats(); s.InFlight != 0 {
			t.Errorf("InFlight = %d after every slot was given back, want 0", s.InFlight)
		}
	})
}

// A wait its caller gives up (a run interrupted while a call waits on a
// rule) counts as a wait of that rule, for as long as it lasted, and
// admits nothing: the summary of a run cut short mid-wait said it had
// waited 0s on the rule that held it.
func TestGivenUpWaitCounts(t *testing.T) {
	for _, queued := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			l, err := New(Options{Rules: []Rule{{N: 1, Window: time.Minute}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Admit(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
			if queued {
				// Another caller at the head: the one given up waits behind it.
				go l.Admit(context.Background(), 1)
				synctest.Wait()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := l.Admit(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Admit = %v, want the deadline", err)
			}
			st := l.Stats()
			if st.Admitted != 1 || st.Waits != 1 || st.WaitTime != 10*time.Second || st.Rules[0].Waits != 1 || st.Rules[0].WaitTime != 10*time.Second {
				t.Errorf("queued %v: admitted %d, waits %d for %v, the rule's %d for %v; want 1 admitted, one wait of 10s on the rule",
					queued, st.Admitted, st.Waits, st.WaitTime, st.Rules[0].Waits, st.Rules[0].WaitTime)
			}
			l.Close()
		})
	}
}
