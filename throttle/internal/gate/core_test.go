package gate_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/internal/gate"
)

// fakeStore refuses the first call it is asked for with a wait of 1s,
// then admits; it has two slots.
type fakeStore struct {
	asked, slotsHeld int
	released         []any
}

func (f *fakeStore) Admit(_ context.Context, costs []int, margin time.Duration) (gate.Decision, error) {
	f.asked++
	if f.asked == 1 {
		return gate.Decision{Wait: time.Second, Rule: 1, Used: []int{1, 5}}, nil
	}
	return gate.Decision{Admitted: 1, At: time.Now(), ID: uint64(f.asked), Used: []int{2, 5 + costs[0]}, Fleet: margin}, nil
}

func (f *fakeStore) Correct(_ context.Context, id uint64, at time.Time, from, to int, _ time.Duration) ([]int, error) {
	return []int{-1, 3}, nil
}

func (f *fakeStore) Publish(_ context.Context, m time.Duration) (time.Duration, error) { return m, nil }

func (f *fakeStore) TrySlot(context.Context, uint64) (any, bool, time.Duration, error) {
	if f.slotsHeld == 2 {
		return nil, false, 100 * time.Millisecond, nil
	}
	f.slotsHeld++
	return f.slotsHeld, true, 0, nil
}

func (f *fakeStore) ReleaseSlot(_ context.Context, s any) {
	f.slotsHeld--
	f.released = append(f.released, s)
}

// TestCore: the wait loop sleeps what the store says and charges the wait
// to its rule; admissions count in flight until released, once; Close
// gives back the slots still held.
func TestCore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rules := []throttle.Rule{{N: 10, Window: time.Second}, {N: 100, Window: time.Minute, Cost: true}}
		f := &fakeStore{}
		c := gate.NewCore(gate.Config{Name: "fake", Rules: rules, GlobalJobs: 2, Timeout: time.Second}, f)
		ctx := context.Background()
		start := time.Now()
		a, err := c.Admit(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		if a.Waited != time.Second || !a.At.Equal(start.Add(time.Second)) || a.Cost != 3 {
			t.Errorf("admission %+v, want admitted at +1s after waiting 1s", a)
		}
		s := c.Stats(throttle.StoreStats{Name: "fake"})
		if s.Admitted != 1 || s.Waits != 1 || s.Rules[1].Waits != 1 || s.Rules[1].Used != 8 || s.InFlight != 1 || s.Store.Name != "fake" {
			t.Errorf("stats %+v, want one admission that waited on rule 1, 8 used, 1 in flight", s)
		}
		if err := a.Correct(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		if s := c.Stats(throttle.StoreStats{}); s.Rules[1].Used != 3 || s.Rules[0].Used != 2 {
			t.Errorf("used %d, %d after a correction, want 2 (unchanged) and 3", s.Rules[0].Used, s.Rules[1].Used)
		}
		b, _ := c.Admit(ctx, 1)
		copyA := a
		a.Release()
		copyA.Release()
		if s := c.Stats(throttle.StoreStats{}); s.InFlight != 1 || f.slotsHeld != 1 {
			t.Errorf("in flight %d, slots held %d after releasing one of two twice, want 1, 1", s.InFlight, f.slotsHeld)
		}
		if _, err := c.Admit(ctx, 101); err == nil {
			t.Error("Admit(101) under cost:100/m succeeded")
		}
		c.Shutdown()
		c.ReleaseHeld(ctx)
		if f.slotsHeld != 0 {
			t.Errorf("%d slots held after close, want 0", f.slotsHeld)
		}
		b.Release() // after close: nothing more to give back
		if len(f.released) != 2 {
			t.Errorf("released %v, want each slot once", f.released)
		}
		if _, err := c.Admit(ctx, 1); err != throttle.ErrClosed {
			t.Errorf("Admit after Shutdown = %v, want ErrClosed", err)
		}
	})
}

// farStore is a store a one-way trip away: it decides trip after it is
// asked and answers trip after that; it admits no call before open, and
// tells one that comes earlier to wait until then.
type farStore struct {
	fakeStore
	trip time.Duration
	open time.Time
	asks []time.Time // when each attempt was decided
}

func (f *farStore) Admit(_ context.Context, costs []int, margin time.Duration) (gate.Decision, error) {
	time.Sleep(f.trip)
	now := time.Now()
	f.asks = append(f.asks, now)
	defer time.Sleep(f.trip)
	if now.Before(f.open) {
		return gate.Decision{Wait: f.open.Sub(now), Used: []int{10, 0}}, nil
	}
	return gate.Decision{Admitted: 1, At: now, ID: uint64(len(f.asks)), Used: []int{10, costs[0]}}, nil
}

// A wait over a slow link asks again the quickest round trip early: the
// attempt reaches the store when the call fits, not a round trip later;
// and one that comes early is only told to wait the rest.
func TestCoreAsksARoundTripEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rules := []throttle.Rule{{N: 10, Window: time.Second}, {N: 100, Window: time.Minute, Cost: true}}
		start := time.Now()
		f := &farStore{trip: 20 * time.Millisecond, open: start.Add(time.Second)}
		c := gate.NewCore(gate.Config{Name: "far", Rules: rules, Jitter: -1}, f)
		a, err := c.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if !a.At.Equal(f.open) || len(f.asks) != 2 {
			t.Errorf("decided at %v after %d attempts, want at the opening (%v) after 2",
				a.At.Sub(start), len(f.asks), f.open.Sub(start))
		}
		a.Release()

		// The link slows down: the quickest trip seen (40ms) is now
		// quicker than the link's (100ms), so the attempt comes a little
		// late, never early.
		f.trip, f.asks, f.open = 50*time.Millisecond, nil, time.Now().Add(time.Second)
		b, err := c.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if late := b.At.Sub(f.open); late < 0 || late > 60*time.Millisecond || len(f.asks) != 2 {
			t.Errorf("decided %v after the opening after %d attempts, want within 60ms after 2", late, len(f.asks))
		}
		b.Release()

		// The link speeds up: an attempt that comes early is told to
		// wait the rest, and the call is decided at the opening.
		f.trip, f.asks, f.open = 5*time.Millisecond, nil, time.Now().Add(time.Second)
		x, err := c.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if x.At.Before(f.open) || x.At.Sub(f.open) > 10*time.Millisecond {
			t.Errorf("decided %v after the opening, want at it (%d attempts)", x.At.Sub(f.open), len(f.asks))
		}
		x.Release()
	})
}

// slowHandStore admits at once, but its answer takes a while to reach
// its caller after it is in hand (parsing, a busy machine): it says the
// reply took 10ms on its way back and hands it over 5ms later.
type slowHandStore struct{ fakeStore }

func (f *slowHandStore) Admit(_ context.Context, costs []int, margin time.Duration) (gate.Decision, error) {
	f.asked++
	replied := time.Now()
	time.Sleep(5 * time.Millisecond)
	return gate.Decision{Admitted: 1, At: replied.Add(-10 * time.Millisecond), ID: uint64(f.asked),
		Used: []int{1, costs[0]}, Latency: 10 * time.Millisecond, Decided: replied}, nil
}

// An admission's latency counts both the store's way back and the time
// from the answer in hand until Admit returns: a margin sized on it
// covers the whole way from the store's instant to the caller's call.
func TestCoreLatencyCountsTheHandOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rules := []throttle.Rule{{N: 10, Window: time.Second}, {N: 100, Window: time.Minute, Cost: true}}
		c := gate.NewCore(gate.Config{Name: "slow", Rules: rules, Jitter: -1}, &slowHandStore{})
		a, err := c.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Release()
		if want := 15 * time.Millisecond; a.Latency != want {
			t.Errorf("latency %v, want %v (10ms on the way back, 5ms handing over)", a.Latency, want)
		}
		if got := time.Since(a.At); a.Latency != got {
			t.Errorf("latency %v, but the store's instant was %v before Admit returned", a.Latency, got)
		}
	})
}

// correctStore admits every call at once and records the corrections it
// is asked for, as a store that keeps each call's cost would.
type correctStore struct {
	fakeStore
	costs map[uint64]int
	asks  [][2]int // from, to
}

func (s *correctStore) Admit(_ context.Context, costs []int, _ time.Duration) (gate.Decision, error) {
	s.asked++
	s.costs[uint64(s.asked)] = costs[0]
	return gate.Decision{Admitted: 1, At: time.Now(), ID: uint64(s.asked), Used: []int{costs[0]}}, nil
}

func (s *correctStore) Correct(_ context.Context, id uint64, _ time.Time, from, to int, _ time.Duration) ([]int, error) {
	s.asks = append(s.asks, [2]int{from, to})
	if s.costs[id] == from { // as Redis does: only from the cost it holds
		s.costs[id] = to
	}
	return []int{s.costs[id]}, nil
}

// TestCoreCorrectsCopies: the store is told the cost the Core recorded
// last for the call, not a copy's stale Cost, so the call costs what the
// last correction said, whichever copy made it; and a correction to the
// cost recorded asks nothing.
func TestCoreCorrectsCopies(t *testing.T) {
	s := &correctStore{costs: map[uint64]int{}}
	c := gate.NewCore(gate.Config{Name: "fake", Rules: []throttle.Rule{{N: 10, Window: time.Minute, Cost: true}}, Timeout: time.Second}, s)
	a, err := c.Admit(context.Background(), 5)
	if err != nil {
		t.Fatal(err)
	}
	b := a
	for _, step := range []struct {
		adm  *throttle.Admission
		cost int
	}{{&a, 1}, {&b, 9}, {&a, 9}, {&b, 1}, {&b, 1}} {
		if err := step.adm.Correct(context.Background(), step.cost); err != nil {
			t.Fatal(err)
		}
		if got := s.costs[1]; got != step.cost {
			t.Errorf("after Correct(%d) the store holds %d for the call, want %d", step.cost, got, step.cost)
		}
	}
	want := [][2]int{{5, 1}, {1, 9}, {9, 1}}
	if len(s.asks) != len(want) || s.asks[0] != want[0] || s.asks[1] != want[1] || s.asks[2] != want[2] {
		t.Errorf("store asked to correct %v, want %v", s.asks, want)
	}
	if used := c.Stats(throttle.StoreStats{}).Rules[0].Used; used != 1 {
		t.Errorf("Used = %d, want 1", used)
	}
}

// admitStore admits every call at once, and records no cost per call.
type admitStore struct{ fakeStore }

func (s *admitStore) Admit(_ context.Context, costs []int, _ time.Duration) (gate.Decision, error) {
	s.asked++
	return gate.Decision{Admitted: 1, At: time.Now(), ID: uint64(s.asked), Used: []int{costs[0]}}, nil
}

func (s *admitStore) Correct(context.Context, uint64, time.Time, int, int, time.Duration) ([]int, error) {
	return []int{-1}, nil
}

// TestCoreCorrectionsKeepNothing: the Core keeps nothing per call
// corrected, so its memory does not grow with the calls corrected in a
// window. It kept the cost of each for twice the longest window: a
// day's rule under pace fetch --cost-from-response, every call corrected,
// held millions of entries. Here 50,000 calls corrected under a day's
// rule grew the live heap by some 3 MB; the bound allows a third of that
// for whatever else the runtime keeps.
func TestCoreCorrectionsKeepNothing(t *testing.T) {
	const calls = 50_000
	c := gate.NewCore(gate.Config{Name: "fake", Rules: []throttle.Rule{{N: 1_000_000_000, Window: 24 * time.Hour, Cost: true}}, Timeout: time.Second}, &admitStore{})
	ctx := context.Background()
	before := liveHeap()
	for range calls {
		a, err := c.Admit(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Correct(ctx, 1); err != nil {
			t.Fatal(err)
		}
		a.Release()
	}
	if grown := int64(liveHeap()) - int64(before); grown > 1<<20 {
		t.Errorf("the live heap grew by %d bytes over %d calls corrected, want nothing kept per call", grown, calls)
	}
	runtime.KeepAlive(c)
}

// liveHeap returns the bytes of the objects the heap holds alive.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// closedStore never has room: every attempt is told to wait a minute on
// rule 0.
type closedStore struct{ fakeStore }

func (f *closedStore) Admit(context.Context, []int, time.Duration) (gate.Decision, error) {
	return gate.Decision{Wait: time.Minute, Rule: 0, Used: []int{10, 0}}, nil
}

// A wait its caller gives up (a run interrupted while a call waits)
// counts as a wait on the rule it slept on, for as long as it lasted,
// and admits nothing.
func TestCoreGivenUpWaitCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rules := []throttle.Rule{{N: 10, Window: time.Minute}, {N: 100, Window: time.Minute}}
		c := gate.NewCore(gate.Config{Name: "fake", Rules: rules, Timeout: time.Second}, &closedStore{})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.Admit(ctx, 1); err == nil {
			t.Fatal("Admit succeeded in a store without room")
		}
		s := c.Stats(throttle.StoreStats{})
		if s.Admitted != 0 || s.Waits != 1 || s.WaitTime != 10*time.Second || s.Rules[0].Waits != 1 || s.Rules[0].WaitTime != 10*time.Second {
			t.Errorf("admitted %d, waits %d for %v, rule 0's %d for %v; want none admitted, one wait of 10s on rule 0",
				s.Admitted, s.Waits, s.WaitTime, s.Rules[0].Waits, s.Rules[0].WaitTime)
		}
		c.Shutdown()
	})
}
