package gate_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/internal/gate"
)

// windowStore is a store a one-way trip away that admits n calls in
// each second (from the bubble's start): in one attempt, as many of the
// calls asked as fit, in order, each its own id, at the instant it
// decides; the first that does not fit is told to wait for the next
// second. It records the costs of each attempt.
type windowStore struct {
	fakeStore
	trip   time.Duration
	n      int
	start  time.Time
	used   map[int64]int // per second: calls admitted
	asks   [][]int
	nextID uint64
	ended  int             // attempts whose context ended first
	fixed  map[uint64]bool // ids corrected
}

func (s *windowStore) Correct(_ context.Context, id uint64, at time.Time, from, to int, _ time.Duration) ([]int, error) {
	s.fixed[id] = true
	return []int{-1}, nil
}

func newWindowStore(trip time.Duration, n int) *windowStore {
	return &windowStore{trip: trip, n: n, start: time.Now(), used: map[int64]int{}, fixed: map[uint64]bool{}}
}

func (s *windowStore) Admit(ctx context.Context, costs []int, margin time.Duration) (gate.Decision, error) {
	s.asks = append(s.asks, slices.Clone(costs))
	select {
	case <-time.After(s.trip):
	case <-ctx.Done():
		s.ended++
		return gate.Decision{}, ctx.Err()
	}
	now := time.Now()
	sec := int64(now.Sub(s.start) / time.Second)
	d := gate.Decision{At: now, ID: s.nextID + 1, Used: []int{0}}
	s.nextID += uint64(len(costs))
	for range costs {
		if s.used[sec] == s.n {
			d.Wait = s.start.Add(time.Duration(sec+1) * time.Second).Sub(now)
			break
		}
		s.used[sec]++
		d.Admitted++
	}
	d.Used[0] = s.used[sec]
	time.Sleep(s.trip)
	return d, nil
}

type result struct {
	name string
	a    throttle.Admission
	err  error
}

// admitAll starts an Admit for each name, in order, each once the one
// before it holds its place, and returns their results as they come.
func admitAll(c *gate.Core, ctxs map[string]context.Context, names ...string) <-chan result {
	out := make(chan result, len(names))
	for _, name := range names {
		ctx := ctxs[name]
		if ctx == nil {
			ctx = context.Background()
		}
		go func() {
			a, err := c.Admit(ctx, 1)
			out <- result{name, a, err}
		}()
		synctest.Wait()
	}
	return out
}

// Callers that queue while an attempt is under way are asked for in one
// attempt, in order; the store admits those that fit, at one instant,
// each with its own id; the rest stay at the head, in order, and are
// asked for together once the store's wait has passed.
func TestCoreBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newWindowStore(20*time.Millisecond, 4)
		c := gate.NewCore(gate.Config{Name: "window", Rules: []throttle.Rule{{N: 4, Window: time.Second}}, Jitter: -1}, s)
		defer c.Shutdown()
		out := admitAll(c, nil, "a", "b", "c", "d", "e", "f")
		if q := c.Queued(); q != 5 {
			t.Errorf("Queued() = %d while a is asked for, want 5", q)
		}
		var got []result
		for range 6 {
			got = append(got, <-out)
		}
		if want := [][]int{{1}, {1, 1, 1, 1, 1}, {1, 1}}; !slices.EqualFunc(s.asks, want, slices.Equal) {
			t.Fatalf("attempts asked for %v, want %v", s.asks, want)
		}
		at := map[string]time.Time{}
		for _, r := range got {
			if r.err != nil {
				t.Fatalf("Admit(%s) = %v", r.name, r.err)
			}
			at[r.name] = r.a.At
			if err := r.a.Correct(context.Background(), 2); err != nil {
				t.Fatal(err)
			}
		}
		if len(s.fixed) != 6 {
			t.Errorf("corrections reached ids %v, want 6 different", s.fixed)
		}
		// a alone, then b, c and d at one instant (the second's room), e
		// and f together at the next second.
		if !at["b"].Equal(at["c"]) || !at["c"].Equal(at["d"]) || !at["b"].After(at["a"]) {
			t.Errorf("b, c, d admitted at %v, %v, %v, want one instant after a's %v", at["b"], at["c"], at["d"], at["a"])
		}
		if !at["e"].Equal(at["f"]) || at["e"].Sub(s.start) < time.Second {
			t.Errorf("e, f admitted at %v, %v, want one instant in the next second", at["e"].Sub(s.start), at["f"].Sub(s.start))
		}
		st := c.Stats(throttle.StoreStats{})
		// e and f were held back once, together: one wait, as if each
		// had asked once the one before it was admitted.
		if st.Admitted != 6 || st.InFlight != 6 || st.Waits != 1 || st.Rules[0].Waits != 1 {
			t.Errorf("stats: %d admitted, %d in flight, %d waits (%d on the rule); want 6, 6, 1 (e's), 1",
				st.Admitted, st.InFlight, st.Waits, st.Rules[0].Waits)
		}
	})
}

// A caller that leaves while queued is never asked for; one that leaves
// while its call is in the attempt under way returns at once, and if the
// store admits its call, the call is spent: not handed out, not in
// flight, not counted. An attempt whose callers have all left ends at
// once. Nothing is left running.
func TestCoreBatchCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newWindowStore(20*time.Millisecond, 10)
		c := gate.NewCore(gate.Config{Name: "window", Rules: []throttle.Rule{{N: 10, Window: time.Second}}, Jitter: -1}, s)
		ctxs := map[string]context.Context{}
		cancels := map[string]context.CancelFunc{}
		for _, name := range []string{"b", "c", "e"} {
			ctxs[name], cancels[name] = context.WithCancel(context.Background())
		}
		out := admitAll(c, ctxs, "a", "b", "c", "d")
		cancels["c"]() // queued: leaves the queue
		synctest.Wait()
		if q := c.Queued(); q != 2 {
			t.Errorf("Queued() = %d after c left, want 2 (b, d)", q)
		}
		got := map[string]result{}
		for range 4 {
			r := <-out
			got[r.name] = r
			if r.name == "a" {
				// b and d are asked for now; b leaves.
				synctest.Wait()
				cancels["b"]()
			}
		}
		if !errors.Is(got["c"].err, context.Canceled) || !errors.Is(got["b"].err, context.Canceled) {
			t.Errorf("Admit(b), Admit(c) = %v, %v, want context.Canceled", got["b"].err, got["c"].err)
		}
		if got["a"].err != nil || got["d"].err != nil {
			t.Fatalf("Admit(a), Admit(d) = %v, %v", got["a"].err, got["d"].err)
		}
		if want := [][]int{{1}, {1, 1}}; !slices.EqualFunc(s.asks, want, slices.Equal) {
			t.Errorf("attempts asked for %v, want %v (c never)", s.asks, want)
		}
		st := c.Stats(throttle.StoreStats{})
		if st.Admitted != 2 || st.InFlight != 2 || s.used[0] != 3 {
			t.Errorf("%d admitted, %d in flight, %d recorded; want 2, 2, 3 (b's call spent)", st.Admitted, st.InFlight, s.used[0])
		}
		for _, name := range []string{"a", "d"} {
			a := got[name].a
			a.Release()
		}

		// Everyone of an attempt leaves: it ends at once.
		out = admitAll(c, ctxs, "e")
		cancels["e"]()
		if r := <-out; !errors.Is(r.err, context.Canceled) {
			t.Errorf("Admit(e) = %v, want context.Canceled", r.err)
		}
		synctest.Wait()
		if s.ended != 1 || s.used[0] != 3 {
			t.Errorf("%d attempts ended early, %d recorded; want e's ended, nothing more recorded", s.ended, s.used[0])
		}
		if st := c.Stats(throttle.StoreStats{}); st.InFlight != 0 || c.Queued() != 0 {
			t.Errorf("%d in flight, %d queued at the end, want 0, 0", st.InFlight, c.Queued())
		}
		c.Shutdown()
	})
}
