package throttle_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	. "github.com/pace-cli/pace/throttle"
)

// These tests run inside synctest bubbles: time.Now and timers are fake
// and time moves only when every goroutine in the bubble is blocked, so
// they never sleep and their instants are exact.

// violations counts, by brute force, the calls that found their rule's
// window (t-W, t] already holding N calls.
func violations(rules []Rule, times []time.Time) int {
	ts := slices.Clone(times)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	bad := 0
	for _, r := range rules {
		for i := range ts {
			in := 0
			for j := 0; j <= i; j++ {
				if ts[j].After(ts[i].Add(-r.Window)) {
					in++
				}
			}
			if in > r.N {
				bad++
			}
		}
	}
	return bad
}

// runJobs has workers goroutines take items and call admit for each, then
// hold the slot for runtime; it returns the admission instants.
func runJobs(items, workers int, runtime time.Duration, admit func(context.Context) (func(), error)) []time.Time {
	var (
		mu    sync.Mutex
		times []time.Time
		wg    sync.WaitGroup
	)
	next := make(chan int, items)
	for i := range items {
		next <- i
	}
	close(next)
	for range workers {
		wg.Go(func() {
			for range next {
				release, err := admit(context.Background())
				if err != nil {
					panic(err)
				}
				mu.Lock()
				times = append(times, time.Now())
				mu.Unlock()
				time.Sleep(runtime)
				release()
			}
		})
	}
	wg.Wait()
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	return times
}

// The seed scenario: 30 calls under 5/1s AND 12/3s with 4 in flight.
func TestSeedScenario(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rules, _ := ParseRules("5/s,12/3s")
		l, err := New(Options{Rules: rules, MaxInFlight: 4})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		times := runJobs(30, 8, 10*time.Millisecond, acquireOf(l))
		if n := violations(rules, times); n != 0 {
			t.Errorf("%d violations, want 0", n)
		}
		if last := times[len(times)-1].Sub(start); last != 7*time.Second {
			t.Errorf("last admission at %v, want exactly 7s (the fastest legal schedule)", last)
		}
		s := l.Stats()
		if s.PeakInFlight > 4 || s.InFlight != 0 || s.Admitted != 30 {
			t.Errorf("peak in flight %d (cap 4), in flight %d, admitted %d", s.PeakInFlight, s.InFlight, s.Admitted)
		}
		for _, r := range s.Rules {
			if r.PeakUsage != 1 {
				t.Errorf("rule %v peak usage %v, want 1: the fastest schedule fills both", r.Rule, r.PeakUsage)
			}
		}
	})
}

// Stacking one limiter per rule records the call in the first limiter when
// it alone admits it, but the call goes out only when the last one admits
// it. Any time between the stages (here a few milliseconds, as a goroutine
// takes to reach the next limiter) lets the first rule be broken. The
// combined limiter, given the same latencies, breaks nothing.
func TestStackedLimitersBreakRules(t *testing.T) {
	rules, _ := ParseRules("5/s,12/3s")
	var stackedBad, combinedBad int
	// latency returns 0..9ms in a fixed sequence, shared by the callers.
	latency := func() func() time.Duration {
		var mu sync.Mutex
		k := 0
		return func() time.Duration {
			mu.Lock()
			defer mu.Unlock()
			k++
			return time.Duration(k*7%10) * time.Millisecond
		}
	}
	synctest.Test(t, func(t *testing.T) {
		lat := latency()
		var stack []*Limiter
		for _, r := range rules {
			l, _ := New(Options{Rules: []Rule{r}})
			stack = append(stack, l)
		}
		times := runJobs(30, 4, 0, func(ctx context.Context) (func(), error) {
			for i, l := range stack {
				if i > 0 {
					time.Sleep(lat()) // on the way from one limiter to the next
				}
				if err := waitN(l, ctx, 1); err != nil {
					return nil, err
				}
			}
			return func() {}, nil
		})
		stackedBad = violations(rules, times)
	})
	synctest.Test(t, func(t *testing.T) {
		lat := latency()
		l, _ := New(Options{Rules: rules})
		combinedBad = violations(rules, runJobs(30, 4, 0, func(ctx context.Context) (func(), error) {
			time.Sleep(lat()) // on the way to the limiter
			return acquireOf(l)(ctx)
		}))
	})
	if stackedBad == 0 {
		t.Errorf("stacked per-rule limiters: 0 violations; the regression scenario no longer shows the flaw")
	}
	if combinedBad != 0 {
		t.Errorf("combined limiter: %d violations, want 0", combinedBad)
	}
	t.Logf("violations over 30 calls: stacked %d, combined %d", stackedBad, combinedBad)
}

// earliest returns the earliest instant at or after at when a call of the
// given cost fits every rule, given the calls admitted before it.
func earliest(rules []Rule, before []Call, at time.Time, cost int) time.Time {
	for {
		moved := false
		for _, r := range rules {
			w := 1
			if r.Cost {
				w = cost
			}
			// The newest calls that fit with this one may stay; the
			// newest of the rest must leave: at its time + Window.
			held := w
			for j := len(before) - 1; j >= 0; j-- {
				c := before[j]
				if !c.At.After(at.Add(-r.Window)) {
					break
				}
				cw := 1
				if r.Cost {
					cw = c.Cost
				}
				if held+cw > r.N {
					at, moved = c.At.Add(r.Window), true
					break
				}
				held += cw
			}
		}
		if !moved {
			return at
		}
	}
}

// Random rule sets (count and cost rules), random costs and random
// arrivals from many goroutines: no violation, admission in arrival order,
// and every admission at the earliest legal instant (the greedy optimum
// for FIFO order).
func TestLimiterProperty(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var rules []Rule
		for range 1 + rng.IntN(3) {
			rules = append(rules, Rule{N: 1 + rng.IntN(8), Window: time.Duration(1+rng.IntN(200)) * 10 * time.Millisecond})
		}
		maxCost := 1
		if seed%2 == 1 { // weighted
			maxCost = 1 + rng.IntN(20)
			for range 1 + rng.IntN(2) {
				rules = append(rules, Rule{N: maxCost + rng.IntN(40), Window: time.Duration(1+rng.IntN(200)) * 10 * time.Millisecond, Cost: true})
			}
		}
		margin := time.Duration(rng.IntN(3)) * 5 * time.Millisecond
		callers := 2 + rng.IntN(30)
		type plan struct {
			delay time.Duration
			cost  int
		}
		plans := make([][]plan, callers)
		for c := range plans {
			for range 1 + rng.IntN(4) {
				// Each caller's delays are distinct modulo 1ms, so no two
				// callers ever arrive at the same instant.
				d := time.Duration(rng.IntN(3000))*time.Millisecond + time.Duration(c+1)*time.Microsecond
				plans[c] = append(plans[c], plan{d, 1 + rng.IntN(maxCost)})
			}
		}
		synctest.Test(t, func(t *testing.T) {
			l, err := New(Options{Rules: rules, Margin: margin})
			if err != nil {
				t.Fatal(err)
			}
			type record struct {
				arrived, admitted time.Time
				cost              int
			}
			var (
				mu      sync.Mutex
				records []record
				wg      sync.WaitGroup
			)
			for c := range callers {
				wg.Go(func() {
					for _, p := range plans[c] {
						time.Sleep(p.delay)
						arrived := time.Now()
						a, err := l.Admit(context.Background(), p.cost)
						if err != nil {
							panic(err)
						}
						a.Release()
						mu.Lock()
						records = append(records, record{arrived, a.At, p.cost})
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			slices.SortFunc(records, func(a, b record) int { return a.arrived.Compare(b.arrived) })
			strict := make([]Rule, len(rules))
			var calls []Call
			for i, r := range rules {
				strict[i] = Rule{N: r.N, Window: r.Window + margin, Cost: r.Cost}
			}
			for i, rec := range records {
				if i > 0 && rec.admitted.Before(records[i-1].admitted) {
					t.Fatalf("seed %d: call %d admitted before the call that arrived before it", seed, i)
				}
				at := rec.arrived
				if i > 0 && records[i-1].admitted.After(at) {
					at = records[i-1].admitted
				}
				if want := earliest(strict, calls, at, rec.cost); !rec.admitted.Equal(want) {
					t.Fatalf("seed %d rules %v margin %v: call %d (cost %d) admitted at %v, greedy optimum %v",
						seed, rules, margin, i, rec.cost, rec.admitted.Sub(records[0].arrived), want.Sub(records[0].arrived))
				}
				calls = append(calls, Call{At: rec.admitted, Cost: rec.cost})
			}
			for _, res := range Check(strict, calls) {
				if res.Violations != 0 {
					t.Fatalf("seed %d: rule %v broken %d times", seed, res.Rule, res.Violations)
				}
			}
		})
	}
}

func TestLimiterFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := New(Options{Rules: []Rule{{N: 1, Window: time.Second}}})
		allowN(l, time.Now(), 1)
		var (
			mu    sync.Mutex
			order []int
			wg    sync.WaitGroup
		)
		for i := range 10 {
			wg.Go(func() {
				if err := waitN(l, context.Background(), 1); err != nil {
					panic(err)
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			})
			synctest.Wait() // caller i is queued before i+1 starts
			time.Sleep(time.Millisecond)
		}
		wg.Wait()
		if !slices.IsSorted(order) {
			t.Errorf("admission order %v, want arrival order", order)
		}
	})
}

func TestLimiterCancelConsumesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := New(Options{Rules: []Rule{{N: 1, Window: time.Second}}, MaxInFlight: 1})
		start := time.Now()
		release, err := acquireOf(l)(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		release()
		// A caller that gives up after 300ms, while it waits for the rate...
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if _, err := acquireOf(l)(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire with a short deadline = %v, want DeadlineExceeded", err)
		}
		// ...leaves no slot held and no call recorded: the next goes at 1s.
		if s := l.Stats(); s.InFlight != 0 || s.Admitted != 1 {
			t.Fatalf("after cancel: in flight %d, admitted %d; want 0, 1", s.InFlight, s.Admitted)
		}
		release, err = acquireOf(l)(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("next admission at %v, want 1s", got)
		}
		release()
		release() // idempotent: must not free a second slot
		if s := l.Stats(); s.InFlight != 0 {
			t.Errorf("in flight %d after double release, want 0", s.InFlight)
		}
	})
}

func TestLimiterCancelledHeadDelaysNobody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := New(Options{Rules: []Rule{{N: 1, Window: time.Second}}})
		start := time.Now()
		allowN(l, time.Now(), 1)
		ctx, cancel := context.WithCancel(context.Background())
		headErr := make(chan error, 1)
		go func() { headErr <- waitN(l, ctx, 1) }()
		synctest.Wait()
		done := make(chan time.Duration, 1)
		go func() {
			if err := waitN(l, context.Background(), 1); err != nil {
				panic(err)
			}
			done <- time.Since(start)
		}()
		synctest.Wait()
		time.Sleep(100 * time.Millisecond)
		cancel()
		if err := <-headErr; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled head: Wait = %v", err)
		}
		if got := <-done; got != time.Second {
			t.Errorf("second waiter admitted at %v, want 1s", got)
		}
	})
}

func TestSlotsFIFOAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := New(Options{MaxInFlight: 2})
		r1, _ := acquireOf(l)(context.Background())
		r2, _ := acquireOf(l)(context.Background())
		ctx, cancel := context.WithCancel(context.Background())
		cancelled := make(chan error, 1)
		go func() { _, err := acquireOf(l)(ctx); cancelled <- err }()
		synctest.Wait()
		got := make(chan int, 2)
		for i := range 2 {
			go func() {
				r, err := acquireOf(l)(context.Background())
				if err != nil {
					panic(err)
				}
				got <- i
				time.Sleep(time.Second)
				r()
			}()
			synctest.Wait()
		}
		cancel()
		if err := <-cancelled; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Acquire = %v", err)
		}
		if s := l.Stats(); s.InFlight != 2 {
			t.Fatalf("in flight %d, want 2", s.InFlight)
		}
		r1()
		if first := <-got; first != 0 {
			t.Errorf("slot went to waiter %d, want 0 (FIFO)", first)
		}
		r2()
		<-got
		time.Sleep(2 * time.Second)
		if s := l.Stats(); s.InFlight != 0 || s.PeakInFlight != 2 || s.SlotWaits != 2 {
			t.Errorf("stats: in flight %d, peak %d, slot waits %d; want 0, 2, 2", s.InFlight, s.PeakInFlight, s.SlotWaits)
		}
	})
}

func TestDoRunsUnderTheGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, _ := New(Options{Rules: []Rule{{N: 2, Window: time.Second}}, MaxInFlight: 1})
		boom := errors.New("boom")
		if err := Do(context.Background(), l, 1, func(a *Admission) error {
			if s := l.Stats(); s.InFlight != 1 {
				t.Errorf("in flight inside Do = %d, want 1", s.InFlight)
			}
			return boom
		}); err != boom {
			t.Errorf("Do = %v, want fn's error", err)
		}
		if s := l.Stats(); s.InFlight != 0 {
			t.Errorf("in flight after Do = %d", s.InFlight)
		}
		// fn panicking still releases.
		func() {
			defer func() { _ = recover() }()
			_ = Do(context.Background(), l, 1, func(*Admission) error { panic("fn") })
		}()
		if s := l.Stats(); s.InFlight != 0 {
			t.Errorf("in flight after a panicking Do = %d", s.InFlight)
		}
		// Not admitted: fn does not run.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := Do(ctx, l, 1, func(*Admission) error {
			t.Error("fn ran without an admission")
			return nil
		}); !errors.Is(err, context.Canceled) {
			t.Errorf("Do with a cancelled context = %v, want context.Canceled", err)
		}
	})
}

// TestUncappedAdmissionsCountInFlight: without a cap, an admission still
// counts in flight until released, so a forgotten Release shows in Stats
// long before a cap would make it hang; a release of a copy, or a second
// release, gives back nothing more.
func TestUncappedAdmissionsCountInFlight(t *testing.T) {
	l, _ := New(Options{Rules: []Rule{{N: 100, Window: time.Second}}})
	ctx := context.Background()
	a, _ := l.Admit(ctx, 1)
	b, _ := l.Admit(ctx, 1)
	c, ok := l.AllowN(time.Now(), 1)
	if !ok {
		t.Fatal("AllowN refused under 100/s")
	}
	if s := l.Stats(); s.InFlight != 3 || s.MaxInFlight != 0 {
		t.Fatalf("in flight %d (cap %d) after three admissions, want 3 (no cap)", s.InFlight, s.MaxInFlight)
	}
	copyA := a
	a.Release()
	copyA.Release()
	a.Release()
	if s := l.Stats(); s.InFlight != 2 {
		t.Errorf("in flight %d after releasing one admission three times, want 2", s.InFlight)
	}
	// A new admission may reuse a's handle: the stale copy still frees nothing.
	d, _ := l.Admit(ctx, 1)
	copyA.Release()
	if s := l.Stats(); s.InFlight != 3 {
		t.Errorf("in flight %d after a stale copy's release, want 3", s.InFlight)
	}
	b.Release()
	c.Release()
	d.Release()
	if s := l.Stats(); s.InFlight != 0 || s.PeakInFlight != 3 {
		t.Errorf("in flight %d, peak %d; want 0, 3", s.InFlight, s.PeakInFlight)
	}
	var zero Admission
	zero.Release() // holds nothing
}

// TestAllowNTakesASlot: under a cap, AllowN admits only while a slot is
// free, like Admit: no path admits around the cap.
func TestAllowNTakesASlot(t *testing.T) {
	l, _ := New(Options{Rules: []Rule{{N: 100, Window: time.Second}}, MaxInFlight: 1})
	now := time.Now()
	a, ok := l.AllowN(now, 1)
	if !ok {
		t.Fatal("AllowN refused with a free slot")
	}
	if _, ok := l.AllowN(now, 1); ok {
		t.Fatal("AllowN admitted a second call over MaxInFlight 1")
	}
	if s := l.Stats(); s.Admitted != 1 || s.InFlight != 1 {
		t.Errorf("admitted %d, in flight %d; want 1, 1 (a refusal records nothing)", s.Admitted, s.InFlight)
	}
	a.Release()
	b, ok := l.AllowN(now, 1)
	if !ok {
		t.Fatal("AllowN refused after the slot was released")
	}
	b.Release()
}
