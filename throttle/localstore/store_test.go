package localstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/localstore"
)

var _ throttle.Backend = (*localstore.Store)(nil)

func mustRules(t testing.TB, spec string) []throttle.Rule {
	t.Helper()
	rs, err := throttle.ParseRules(spec)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// open opens the quota key in dir keeping spec, with o's other options
// (no jitter unless set), closed when the test ends.
func open(t testing.TB, dir, key, spec string, o localstore.Options) *localstore.Store {
	t.Helper()
	o.Dir, o.Key, o.Rules = dir, key, mustRules(t, spec)
	if o.Jitter == 0 {
		o.Jitter = -1
	}
	s, err := localstore.Open(context.Background(), o)
	if err != nil {
		t.Fatalf("Open(%q, %q) = %v", key, spec, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// step is one admission in a step table: a call of cost that arrives at
// offset at and should be admitted at offset want (from the first call).
type step struct {
	at   time.Duration
	cost int
	want time.Duration
}

// runSteps admits the steps one after the other through s, each no
// earlier than its arrival, and checks when each was admitted. It runs in
// a synctest bubble, so the offsets are exact.
func runSteps(t *testing.T, s *localstore.Store, steps []step) {
	t.Helper()
	t0 := time.Now()
	for i, st := range steps {
		time.Sleep(time.Until(t0.Add(st.at)))
		a, err := s.Admit(context.Background(), st.cost)
		if err != nil {
			t.Fatalf("step %d: Admit(ctx, %d) = %v", i, st.cost, err)
		}
		if got := a.At.Sub(t0); got != st.want || a.Cost != st.cost {
			t.Errorf("step %d: Admit(ctx, %d) at %v = {At %v, Cost %d}, want {%v, %d}", i, st.cost, st.at, got, a.Cost, st.want, st.cost)
		}
		a.Release()
	}
}

func TestSteps(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rules string
		o     localstore.Options
		steps []step
	}{
		{"count and cost", "3/s,cost:10/s", localstore.Options{}, []step{
			{0, 4, 0},
			{0, 4, 0},
			{0, 1, 0},                          // 3 calls, cost 9: both rules nearly full
			{0, 1, time.Second},                // 3/s is full until the calls at 0 leave, at 1s
			{time.Second, 10, 2 * time.Second}, // cost 1 held at 1s: 11 > 10 until 2s
			{2 * time.Second, 3, 3 * time.Second},
			{3 * time.Second, 1, 3 * time.Second}, // cost 4 held: fits
			{3 * time.Second, 6, 3 * time.Second}, // cost 10 exactly
		}},
		{"half-open window", "2/100ms", localstore.Options{}, []step{
			{0, 1, 0},
			{50 * time.Millisecond, 1, 50 * time.Millisecond},
			{50 * time.Millisecond, 1, 100 * time.Millisecond}, // the call at 0 leaves at exactly 100ms
			{100 * time.Millisecond, 1, 150 * time.Millisecond},
		}},
		{"count rules count calls, not costs", "2/s", localstore.Options{}, []step{
			{0, 1000, 0},
			{0, 1000, 0},
			{0, 1, time.Second},
		}},
		{"counter", "4/1024ms", localstore.Options{CounterAbove: -1}, []step{
			// Buckets of 1ms; the bucket of the calls at 0 counts whole
			// until 1025ms-1ns, one bucket later than a log.
			{0, 1, 0}, {0, 1, 0}, {0, 1, 0}, {0, 1, 0},
			{0, 1, 1025*time.Millisecond - 1},
		}},
		{"cost counter", "cost:10/1024ms", localstore.Options{CounterAbove: -1}, []step{
			{0, 6, 0},
			{500 * time.Millisecond, 4, 500 * time.Millisecond},
			{600 * time.Millisecond, 5, 1025*time.Millisecond - 1}, // the 6 at 0 must leave
		}},
		{"margin", "2/s", localstore.Options{Margin: 100 * time.Millisecond}, []step{
			{0, 1, 0}, {0, 1, 0}, {0, 1, 1100 * time.Millisecond},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				runSteps(t, open(t, t.TempDir(), "steps", tt.rules, tt.o), tt.steps)
			})
		})
	}
}

// The store decides as the in-memory limiter does: for one caller, with
// random rules (logs and counters, counts and costs), costs and arrivals,
// both admit every call at the same instant.
func TestSameAsLimiter(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for round := range 6 {
		var rules []throttle.Rule
		// Windows of k*1024µs with k dividing 10^6: the buckets of a
		// counter (k µs wide) then start at the same instants on the
		// limiter's timeline (from the bubble's epoch, 2000-01-01) as on
		// the store's (from 1970).
		ks := []int{50, 80, 100, 125, 160, 200, 250, 400}
		for range 1 + rng.IntN(3) {
			r := throttle.Rule{N: 2 + rng.IntN(6), Window: time.Duration(ks[rng.IntN(len(ks))]) * 1024 * time.Microsecond}
			if rng.IntN(2) == 0 {
				r.N *= 5
				r.Cost = true
			}
			rules = append(rules, r)
		}
		maxCost := max(throttle.MaxCost(rules), 1)
		counters := rng.IntN(2) == 0
		type call struct {
			gap  time.Duration
			cost int
		}
		var calls []call
		for range 30 {
			calls = append(calls, call{time.Duration(rng.IntN(60)) * time.Millisecond, 1 + rng.IntN(min(maxCost, 8))})
		}
		spec := throttle.FormatRules(rules)
		name := fmt.Sprintf("seed %d round %d: %s counters=%v", seed, round, spec, counters)

		var want []time.Time
		synctest.Test(t, func(t *testing.T) {
			opts := throttle.Options{Rules: rules}
			if counters {
				opts.CounterAbove = -1
			}
			l, err := throttle.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range calls {
				time.Sleep(c.gap)
				a, err := l.Admit(context.Background(), c.cost)
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, a.At)
			}
		})
		synctest.Test(t, func(t *testing.T) {
			o := localstore.Options{}
			if counters {
				o.CounterAbove = -1
			}
			s := open(t, t.TempDir(), "same", spec, o)
			for i, c := range calls {
				time.Sleep(c.gap)
				a, err := s.Admit(context.Background(), c.cost)
				if err != nil {
					t.Fatal(err)
				}
				if !a.At.Equal(want[i]) {
					t.Fatalf("%s: call %d (cost %d): admitted at %v, the in-memory limiter at %v",
						name, i, c.cost, a.At.Sub(want[0]), want[i].Sub(want[0]))
				}
			}
		})
	}
}

func TestCostErrors(t *testing.T) {
	s := open(t, t.TempDir(), "cost", "5/s,cost:40/s", localstore.Options{})
	for _, cost := range []int{0, -1, 41} {
		if _, err := s.Admit(context.Background(), cost); !errors.Is(err, throttle.ErrBadCost) {
			t.Errorf("Admit(ctx, %d) = %v, want ErrBadCost", cost, err)
		}
	}
	if n := s.Stats().Store.RoundTrips; n != 1 {
		t.Errorf("RoundTrips = %d after bad costs, want 1 (Open's)", n)
	}
}

func TestCorrect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := open(t, t.TempDir(), "correct", "cost:10/s,100/s", localstore.Options{})
		t0 := time.Now()
		a, err := s.Admit(ctx, 8)
		if err != nil {
			t.Fatal(err)
		}
		// Down: the room frees at once.
		if err := a.Correct(context.Background(), 2); err != nil {
			t.Fatalf("Correct(2) = %v", err)
		}
		if s := s.Stats(); s.Rules[0].Used != 2 || s.Rules[1].Used != 1 {
			t.Errorf("after Correct(2): used %d, %d; want 2, 1", s.Rules[0].Used, s.Rules[1].Used)
		}
		b, err := s.Admit(ctx, 8)
		if err != nil || !b.At.Equal(t0) {
			t.Fatalf("Admit(ctx, 8) after Correct(2) = %v, %v; want at once", b, err)
		}
		// Up: later calls wait until the true costs have left.
		if err := b.Correct(context.Background(), 10); err != nil {
			t.Fatalf("Correct(10) = %v", err)
		}
		c, err := s.Admit(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.At.Sub(t0); got != time.Second {
			t.Errorf("Admit(ctx, 1) after Correct(10) at %v, want 1s (12 held until the calls at 0 leave)", got)
		}
		if s := s.Stats(); s.Rules[0].PeakUsage != 1.2 {
			t.Errorf("PeakUsage = %v, want 1.2 (the window went over by the correction)", s.Rules[0].PeakUsage)
		}
		// A call that has left the window is not corrected.
		time.Sleep(2 * time.Second)
		if err := c.Correct(context.Background(), 5); err != nil {
			t.Fatal(err)
		}
		if s := s.Stats(); s.Rules[0].Used != 0 {
			t.Errorf("used %d after correcting a call that left, want 0", s.Rules[0].Used)
		}
	})
}

func TestCorrectCounter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := open(t, t.TempDir(), "correct", "cost:10/1024ms", localstore.Options{CounterAbove: -1})
		a, err := s.Admit(ctx, 9)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Correct(context.Background(), 3); err != nil {
			t.Fatal(err)
		}
		t0 := a.At
		b, err := s.Admit(ctx, 7)
		if err != nil || !b.At.Equal(t0) {
			t.Fatalf("Admit(ctx, 7) after Correct(3) = %v, %v; want at once", b, err)
		}
	})
}

func TestPauseAndMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := open(t, t.TempDir(), "pause", "2/s", localstore.Options{})
		t0 := time.Now()
		s.PauseUntil(t0.Add(500*time.Millisecond), "429")
		s.PauseUntil(t0.Add(200*time.Millisecond), "shorter") // never shortens
		a, err := s.Admit(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.At.Sub(t0); got != 500*time.Millisecond {
			t.Errorf("admitted at %v during a pause until 500ms", got)
		}
		st := s.Stats()
		if st.Pauses != 1 || st.PauseWaits != 1 || st.PauseReason != "429" || st.PauseWaitTime != 500*time.Millisecond {
			t.Errorf("Stats() = %+v, want one pause of 500ms, reason 429", st)
		}
		s.SetMargin(250 * time.Millisecond)
		if _, err := s.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
		b, err := s.Admit(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.At.Sub(t0); got != 1750*time.Millisecond {
			t.Errorf("third call with a 250ms margin at %v, want 1.75s", got)
		}
		if st := s.Stats(); st.Margin != 250*time.Millisecond || st.Rules[0].Waits != 1 {
			t.Errorf("Stats() = %+v, want margin 250ms and one wait on 2/s", st)
		}
		if err := s.Seed([]throttle.Call{{At: time.Now(), Cost: 1}, {At: time.Now(), Cost: 1}}); err != nil {
			t.Errorf("Seed = %v, want nil", err)
		}
		c, err := s.Admit(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.At.Sub(t0); got != 1750*time.Millisecond {
			t.Errorf("call after Seed at %v, want 1.75s: Seed does nothing", got)
		}
	})
}

func TestStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		s := open(t, t.TempDir(), "stats", "cost:10/s,2/s", localstore.Options{GlobalJobs: 3})
		var as []throttle.Admission
		for _, c := range []int{3, 4, 1} {
			a, err := s.Admit(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			as = append(as, a)
		}
		st := s.Stats()
		want := throttle.StoreStats{Name: "local", RoundTrips: 1 + 4} // Open, then one refusal
		if st.Store != want {
			t.Errorf("Stats().Store = %+v, want %+v", st.Store, want)
		}
		if st.Admitted != 3 || st.Waits != 1 || st.InFlight != 3 || st.PeakInFlight != 3 || st.MaxInFlight != 3 {
			t.Errorf("Stats() = %+v, want 3 admitted, 1 wait, 3 in flight of 3", st)
		}
		if st.Rules[0].Used != 1 || st.Rules[1].Used != 1 || st.Rules[1].Waits != 1 || st.Rules[1].WaitTime != time.Second {
			t.Errorf("Stats().Rules = %+v, want cost 1 and 1 call held, one 1s wait on 2/s", st.Rules)
		}
		if as[2].Waited != time.Second || as[0].Waited != 0 {
			t.Errorf("Waited = %v, %v; want 0, 1s", as[0].Waited, as[2].Waited)
		}
		for _, a := range as {
			a.Release()
			a.Release()
		}
		if st := s.Stats(); st.InFlight != 0 {
			t.Errorf("InFlight = %d after releases, want 0", st.InFlight)
		}
	})
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		dir := t.TempDir()
		s := open(t, dir, "close", "1/h", localstore.Options{GlobalJobs: 2})
		if _, err := s.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
		errc := make(chan error)
		go func() {
			_, err := s.Admit(ctx, 1) // waits an hour for 1/h
			errc <- err
		}()
		synctest.Wait()
		if err := s.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
		if err := <-errc; !errors.Is(err, throttle.ErrClosed) {
			t.Errorf("waiting Admit after Close = %v, want ErrClosed", err)
		}
		if _, err := s.Admit(ctx, 1); !errors.Is(err, throttle.ErrClosed) {
			t.Errorf("Admit after Close = %v, want ErrClosed", err)
		}
		_ = s.Close()
		// The slot it held is free again.
		q, err := localstore.Inspect(dir, "close")
		if err != nil {
			t.Fatal(err)
		}
		if len(q.Slots) != 0 {
			t.Errorf("slots after Close: %+v, want none", q.Slots)
		}
	})
}

func TestSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		dir := t.TempDir()
		o := localstore.WithSlotPoll(localstore.Options{GlobalJobs: 2}, 10*time.Millisecond)
		// Two stores in one process exclude each other as two processes do.
		a := open(t, dir, "slots", "100/s", o)
		b := open(t, dir, "slots", "100/s", o)
		a1, err := a.Admit(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
		got := make(chan throttle.Admission)
		go func() {
			adm, err := b.Admit(ctx, 1)
			if err != nil {
				t.Error(err)
			}
			got <- adm
		}()
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("a third call got a slot of 2")
		default:
		}
		t0 := time.Now()
		a1.Release()
		b3 := <-got
		if d := time.Since(t0); d > 10*time.Millisecond {
			t.Errorf("slot taken %v after its release, want within one poll (10ms)", d)
		}
		if st := b.Stats(); st.SlotWaits != 1 || st.InFlight != 2 {
			t.Errorf("Stats() = %+v, want one slot wait and 2 in flight", st)
		}
		q, err := localstore.Inspect(dir, "slots")
		if err != nil {
			t.Fatal(err)
		}
		if len(q.Slots) != 2 || !q.Slots[0].Alive || q.Slots[0].PID != os.Getpid() || q.Slots[1].Since.IsZero() {
			t.Errorf("Inspect().Slots = %+v, want 2 held by this process", q.Slots)
		}
		b3.Release()
		// A context that ends while waiting for a slot holds nothing.
		a2, _ := a.Admit(ctx, 1)
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := b.Admit(short, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Admit with every slot held = %v, want DeadlineExceeded", err)
		}
		a2.Release()
	})
}

func TestRuleMismatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		dir := t.TempDir()
		if _, err := open(t, dir, "m", "10/s,100/m", localstore.Options{}).Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := open(t, dir, "m", "100/m,10/s", localstore.Options{}).Admit(ctx, 1); err != nil {
			t.Errorf("same rules in another order: Admit = %v", err)
		}
		for _, tt := range []struct {
			rules string
			o     localstore.Options
		}{
			{"20/s", localstore.Options{}},
			{"10/s,100/m", localstore.Options{GlobalJobs: 3}},
			{"10/s,100/m", localstore.Options{CounterAbove: -1}},
			{"10/s,cost:100/m", localstore.Options{}},
			{"", localstore.Options{}},
		} {
			o := tt.o
			o.Dir, o.Key, o.Rules = dir, "m", mustRules(t, tt.rules)
			_, err := localstore.Open(ctx, o)
			var me *throttle.MismatchError
			if !errors.As(err, new(*throttle.MismatchError)) || !errors.As(err, &me) || me.Stored != "10/s,100/m" || me.Key != "m" {
				t.Errorf("Open(%q, %+v) = %v, want a MismatchError naming the stored rules", tt.rules, tt.o, err)
			}
		}

		// Another process slips in between Open and the first admission.
		late := open(t, dir, "m2", "5/s", localstore.Options{})
		other := open(t, dir, "m2", "7/s", localstore.Options{})
		if _, err := other.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
		_, err := late.Admit(ctx, 1)
		if !errors.As(err, new(*throttle.MismatchError)) || !strings.Contains(err.Error(), `"7/s"`) || !strings.Contains(err.Error(), `"5/s"`) {
			t.Errorf("Admit after another process took the quota = %v, want a *throttle.MismatchError naming both", err)
		}
		if st := late.Stats(); st.Admitted != 0 || st.Store.Failures != 0 {
			t.Errorf("Stats() = %+v, want nothing admitted and no failure", st)
		}

		// Once the stored rules' windows have passed unused, other rules
		// take the quota over; the old ones are then refused.
		time.Sleep(time.Second)
		if _, err := late.Admit(ctx, 1); err != nil {
			t.Errorf("Admit once the other rules expired = %v", err)
		}
		if _, err := other.Admit(ctx, 1); !errors.As(err, new(*throttle.MismatchError)) {
			t.Errorf("Admit with the rules taken over = %v, want a *throttle.MismatchError", err)
		}
	})
}

func TestBadKeys(t *testing.T) {
	dir := t.TempDir()
	for _, key := range []string{".", "..", "a/b", `a\b`, "../x", "a b", "é", "a:b", "a\x00", strings.Repeat("k", 129)} {
		_, err := localstore.Open(context.Background(), localstore.Options{Dir: dir, Key: key})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", key)) {
			t.Errorf("Open(key %q) = %v, want an error quoting the key", key, err)
		}
		if _, err := localstore.Inspect(dir, key); err == nil {
			t.Errorf("Inspect(key %q) = nil error", key)
		}
		if err := localstore.Reset(dir, key); err == nil {
			t.Errorf("Reset(key %q) = nil error", key)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("bad keys left files: %v", ents)
	}
	for _, key := range []string{"a", "api.openai.com", "A-b_c.1", strings.Repeat("k", 128)} {
		open(t, dir, key, "1/s", localstore.Options{})
	}
	// An empty key is the default quota.
	s := open(t, dir, "", "1/s", localstore.Options{})
	if got := s.Path(); got != filepath.Join(dir, localstore.DefaultKey+".db") {
		t.Errorf("Path() = %s, want the default quota's", got)
	}
}

func TestDamagedStore(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noise := make([]byte, 64<<10)
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	for _, tt := range []struct {
		name    string
		content []byte
	}{
		{"text", []byte("hello, this is not a database\n")},
		{"noise", noise},
		{"a page of zeros", make([]byte, 4096)},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "bad.db")
		if err := os.WriteFile(path, tt.content, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := localstore.Open(context.Background(), localstore.Options{Dir: dir, Key: "bad", Rules: mustRules(t, "1/s")})
		if !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move it away") {
			t.Errorf("%s: Open = %v, want ErrBackend naming %s and saying to move it away", tt.name, err, path)
		}
		if b, _ := os.ReadFile(path); string(b) != string(tt.content) {
			t.Errorf("%s: the damaged file was changed", tt.name)
		}
		if _, err := localstore.Inspect(dir, "bad"); !errors.Is(err, throttle.ErrBackend) {
			t.Errorf("%s: Inspect = %v, want ErrBackend", tt.name, err)
		}
	}

	// A bbolt file that is not a pace store.
	dir := t.TempDir()
	path := filepath.Join(dir, "other.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("mine")); return err })
	_ = db.Close()
	_, err = localstore.Open(context.Background(), localstore.Options{Dir: dir, Key: "other", Rules: mustRules(t, "1/s")})
	if !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), "not a pace store") {
		t.Errorf("Open(another program's bbolt file) = %v, want ErrBackend: not a pace store", err)
	}
}

func TestNewerVersion(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, "v", "1/s", localstore.Options{})
	if _, err := s.Admit(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	db, err := bbolt.Open(filepath.Join(dir, "v.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("version"), []byte{0, 0, 0, 0, 0, 0, 0, 2})
	})
	_ = db.Close()
	_, err = localstore.Open(context.Background(), localstore.Options{Dir: dir, Key: "v", Rules: mustRules(t, "1/s")})
	if !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), "version 2") || !strings.Contains(err.Error(), "move the file away") {
		t.Errorf("Open(a newer store) = %v, want ErrBackend naming version 2", err)
	}
}

func TestInspectResetKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		dir := t.TempDir()
		if _, err := localstore.Inspect(dir, "q"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Inspect(no quota) = %v, want ErrNotExist", err)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("Inspect(no quota) left %d files in the directory (%s), want none", len(left), left[0].Name())
		}
		s := open(t, dir, "q", "cost:10/s,3/s,2000000/h", localstore.Options{GlobalJobs: 2})
		t0 := time.Now()
		for _, c := range []int{4, 6} {
			a, err := s.Admit(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Release()
		}
		// A quota is in the directory once a call has been recorded: Open
		// only reads.
		if a, err := open(t, dir, "other", "1/s", localstore.Options{}).Admit(ctx, 1); err != nil {
			t.Fatal(err)
		} else {
			a.Release()
		}
		time.Sleep(100 * time.Millisecond)
		q, err := localstore.Inspect(dir, "q")
		if err != nil {
			t.Fatal(err)
		}
		want := []throttle.RuleStats{
			{Rule: throttle.Rule{N: 3, Window: time.Second}, Used: 2, Usage: 2.0 / 3},
			{Rule: throttle.Rule{N: 10, Window: time.Second, Cost: true}, Used: 10, Usage: 1},
			{Rule: throttle.Rule{N: 2000000, Window: time.Hour}, Counter: true, Used: 2, Usage: 1e-6},
		}
		if q.Spec != "3/s,cost:10/s,2000000/h global-jobs=2" || !slices.Equal(q.Rules, want) || q.GlobalJobs != 2 || q.Expired {
			t.Errorf("Inspect() = %+v, want spec, rules %+v", q, want)
		}
		if !q.Now.Equal(t0.Add(100*time.Millisecond)) || !q.Next.Equal(t0.Add(time.Second)) {
			t.Errorf("Inspect(): Now %v, Next %v; want 100ms, 1s", q.Now.Sub(t0), q.Next.Sub(t0))
		}
		if len(q.Slots) != 2 || q.Slots[0].Index != 0 || q.Slots[1].Index != 1 || !q.Slots[1].Alive ||
			q.Slots[0].PID != os.Getpid() || !q.Slots[0].Since.Equal(t0) {
			t.Errorf("Inspect().Slots = %+v, want slots 0 and 1 held by this process since t0", q.Slots)
		}

		keys, err := localstore.Keys(dir)
		if err != nil || !slices.Equal(keys, []string{"other", "q"}) {
			t.Errorf("Keys() = %q, %v; want other, q", keys, err)
		}
		if keys, err := localstore.Keys(filepath.Join(dir, "none")); err != nil || len(keys) != 0 {
			t.Errorf("Keys(missing dir) = %q, %v; want none", keys, err)
		}

		if err := localstore.Reset(dir, "q"); !errors.Is(err, localstore.ErrInUse) {
			t.Errorf("Reset while open = %v, want ErrInUse", err)
		}
		_ = s.Close()
		if err := localstore.Reset(dir, "q"); err != nil {
			t.Fatalf("Reset() = %v", err)
		}
		if _, err := localstore.Inspect(dir, "q"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Inspect after Reset = %v, want ErrNotExist", err)
		}
		if err := localstore.Reset(dir, "q"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("second Reset = %v, want ErrNotExist", err)
		}
		// Any rules may take a reset quota at once.
		if _, err := open(t, dir, "q", "1/m", localstore.Options{}).Admit(ctx, 1); err != nil {
			t.Errorf("Admit after Reset = %v", err)
		}
	})
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("PACE_STATE_DIR", "/x/pace")
	if d, err := localstore.DefaultDir(); err != nil || d != "/x/pace" {
		t.Errorf("DefaultDir() with PACE_STATE_DIR = %q, %v", d, err)
	}
	t.Setenv("PACE_STATE_DIR", "")
	abs := filepath.Join(t.TempDir(), "state")
	t.Setenv("XDG_STATE_HOME", abs)
	if d, err := localstore.DefaultDir(); err != nil || d != filepath.Join(abs, "pace") {
		t.Errorf("DefaultDir() with XDG_STATE_HOME = %q, %v", d, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative") // ignored, as the XDG spec says
	home, _ := os.UserHomeDir()
	if d, err := localstore.DefaultDir(); err != nil || !strings.HasPrefix(d, home) || filepath.Base(d) != "pace" {
		t.Errorf("DefaultDir() = %q, %v; want a pace directory under %s", d, err, home)
	}
}

// Open creates the directory, private to the user.
func TestOpenCreatesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	open(t, dir, "q", "1/s", localstore.Options{})
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("directory mode %v, want no access for others", perm)
	}
}

func TestAdvance(t *testing.T) {
	const s = int64(time.Second)
	for _, tt := range []struct {
		name              string
		last, wall, clock int64
		want              int64
	}{
		{"first call", 0, 0, 100 * s, 100 * s},
		{"the clock moves on", 100 * s, 100 * s, 101 * s, 101 * s},
		{"same instant", 100 * s, 100 * s, 100 * s, 100 * s},
		{"a step back: time stays", 100 * s, 100 * s, 40 * s, 100 * s},
		{"behind: half speed", 100 * s, 40 * s, 42 * s, 101 * s},
		{"caught up", 130 * s, 100 * s, 160 * s, 160 * s},
		{"behind, by a hair", 100 * s, 100 * s, 100*s - 1, 100 * s},
	} {
		if got := localstore.Advance(tt.last, tt.wall, tt.clock); got != tt.want {
			t.Errorf("%s: Advance(%d, %d, %d) = %d, want %d", tt.name, tt.last, tt.wall, tt.clock, got, tt.want)
		}
	}
}

// A store stays small: each rule keeps at most N calls (a log) or about
// 1026 buckets (a counter), whatever the number of calls over time.
func TestBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		s := open(t, dir, "b", "500/100ms,cost:5000/100ms,10000/256ms", localstore.Options{CounterAbove: 5000})
		for i := range 1500 {
			if _, err := s.Admit(context.Background(), 1+i%7); err != nil {
				t.Fatal(err)
			}
			time.Sleep(250 * time.Microsecond)
		}
		_ = s.Close()
		db, err := bbolt.Open(filepath.Join(dir, "b.db"), 0o600, &bbolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_ = db.View(func(tx *bbolt.Tx) error {
			return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
				n := b.Stats().KeyN
				// A log holds the calls of one window, 400; a counter the
				// buckets of one window, 1024, and one partly outside; meta
				// its 8 keys and this process's margin.
				switch most := map[string]int{"meta": 9, "r0:500/100ms": 401, "r1:cost:5000/100ms": 401, "r2:10000/256ms:counter": 1026}[string(name)]; {
				case most == 0:
					t.Errorf("unexpected bucket %q", name)
				case n > most || n < most*9/10:
					t.Errorf("bucket %q holds %d keys, want about %d and no more", name, n, most)
				}
				return nil
			})
		})
		if fi, _ := os.Stat(filepath.Join(dir, "b.db")); fi.Size() > 1<<20 {
			t.Errorf("store of %d bytes after 1500 calls, want well under 1MB", fi.Size())
		}
	})
}

// Processes sharing a quota keep the widest margin in force among them: a
// call admitted a window after another process's is kept a window plus
// that process's margin later, a margin widened after a call reaches the
// others before its process admits again, and a margin no call needs any
// more stops counting.
func TestFleetMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		wide := open(t, dir, "fleet", "1/s", localstore.Options{Margin: 200 * time.Millisecond})
		narrow := open(t, dir, "fleet", "1/s", localstore.Options{})
		t0 := time.Now()
		admit := func(name string, s *localstore.Store, want time.Duration) {
			t.Helper()
			a, err := s.Admit(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.At.Sub(t0); got != want {
				t.Errorf("%s admitted at %v, want %v", name, got, want)
			}
		}
		admit("wide", wide, 0)
		admit("narrow, after wide's call", narrow, 1200*time.Millisecond)
		// Wide's own entry is not its fleet's: it keeps its own margin.
		if m := wide.Stats().Margin; m != 200*time.Millisecond {
			t.Errorf("wide's Stats().Margin = %v, want its own 200ms", m)
		}
		wide.SetMargin(0) // narrower: nothing to tell
		admit("wide, margin 0", wide, 2200*time.Millisecond)
		wide.SetMargin(300 * time.Millisecond) // its call left late
		synctest.Wait()
		// In force until wide's call at 2.2s no longer counts, at 3.5s:
		// then the window (2.5s, 3.5s] is empty.
		admit("narrow, after wide widened", narrow, 3500*time.Millisecond)
		if m := narrow.Stats().Margin; m != 0 {
			t.Errorf("narrow's Stats().Margin = %v once wide's margin expired, want 0", m)
		}
	})
}

// commits returns how many write transactions the store file at path has
// committed (bbolt's transaction id), 0 for no file.
func commits(t *testing.T, path string) int {
	t.Helper()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id int
	_ = db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil })
	return id
}

// TestOneTransactionPerAdmission: checking the stored rules at Open
// commits nothing (an empty commit costs the fsyncs of a real one), and
// each admission is one write transaction: pace exec pays for one.
func TestOneTransactionPerAdmission(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, "one", "10/s", localstore.Options{})
	path := s.Path()
	if n := commits(t, path); n != 0 {
		t.Errorf("%d commits after Open of a new quota, want 0", n)
	}
	for i := range 3 {
		a, err := s.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
		if n, want := commits(t, path), 2+i; n != want {
			t.Errorf("transaction %d after %d admissions, want %d (bbolt creates a file at 1, then one per admission)", n, i+1, want)
		}
	}
	_ = s.Close()
	before := commits(t, path)
	s = open(t, dir, "one", "10/s", localstore.Options{})
	if n := commits(t, path); n != before {
		t.Errorf("Open of an existing quota committed %d transactions, want none", n-before)
	}
	_ = s.Close()
	// A mismatch is still found at Open, by reading.
	if _, err := localstore.Open(context.Background(), localstore.Options{Dir: dir, Key: "one",
		Rules: []throttle.Rule{{N: 11, Window: time.Second}}}); !errors.As(err, new(*throttle.MismatchError)) {
		t.Errorf("Open with other rules = %v, want a *throttle.MismatchError", err)
	}
}

// crashHost plays what a crash of the host can do under the default
// durability (no fsync) to a quota of rules: it admits durable calls,
// keeps the store file as the disk then holds it, admits lost more (in
// the kernel's cache only), then puts the file back as the disk kept it,
// as after the reboot. It returns the instants of every admission, lost
// ones included, or false if the lost admissions did not all come within
// SyncEvery of the durable ones (one of them waited for the disk, which a
// crash does not undo).
//
// With torn, the disk keeps the store's two meta pages as the last
// transaction wrote them but every other page as the durable admissions
// left it, as when the kernel wrote back only part of the last
// transactions' pages.
func crashHost(t *testing.T, dir, key, rules string, durable, lost int, torn bool) ([]time.Time, bool) {
	t.Helper()
	var times []time.Time
	s := open(t, dir, key, rules, localstore.WithBoot(localstore.Options{}, "boot-1"))
	admit := func(n int) {
		t.Helper()
		for range n {
			a, err := s.Admit(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			a.Release()
			times = append(times, a.At)
		}
	}
	admit(durable)
	onDisk, err := os.ReadFile(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	admit(lost)
	_ = s.Close()
	if torn {
		last, err := os.ReadFile(s.Path())
		if err != nil {
			t.Fatal(err)
		}
		const metaPages = 2 * 4096 // bbolt's page size on this host, at least
		onDisk = append(last[:metaPages:metaPages], onDisk[min(metaPages, len(onDisk)):]...)
	}
	if err := os.WriteFile(s.Path(), onDisk, 0o600); err != nil {
		t.Fatal(err)
	}
	return times, times[len(times)-1].Sub(times[0]) < localstore.SyncEvery
}

// TestHostCrashRecovered: after a crash of the host that lost
// admissions, the first admission in the new boot takes every rule to
// hold what the lost admissions can have used, so no rule is exceeded in
// the window that straddles the crash; a count rule of a second or more
// bounds what that costs the others. (A store the crash left damaged is
// refused, see TestDamagedStore; with Options.Sync nothing Admit returned
// is lost.)
func TestHostCrashRecovered(t *testing.T) {
	ctx := context.Background()
	// 5/h: 3 calls kept, 2 lost. The rule is taken as full: nothing more
	// this hour, and 5 calls in the window, not 7.
	dir := t.TempDir()
	times, ok := crashHost(t, dir, "crash", "5/h", 3, 2, false)
	if !ok {
		t.Skip("the machine is too slow: the admissions took longer than SyncEvery")
	}
	s := open(t, dir, "crash", "5/h", localstore.WithBoot(localstore.Options{}, "boot-2"))
	for {
		shortCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		a, err := s.Admit(shortCtx, 1)
		cancel()
		if err != nil {
			break
		}
		a.Release()
		times = append(times, a.At)
	}
	calls := make([]throttle.Call, len(times))
	for i, at := range times {
		calls[i] = throttle.Call{At: at, Cost: 1}
	}
	rules := mustRules(t, "5/h")
	if res := throttle.Check(rules, calls)[0]; res.Peak > rules[0].N {
		t.Errorf("after the crash the window holds %d calls (%d admitted after it), want at most N = %d",
			res.Peak, len(times)-5, rules[0].N)
	}

	// 5/s and 100/h: calls lost within SyncEvery are at most 5 (the 5/s
	// rule), so the hourly rule counts 3 kept + 5, not 100.
	dir = t.TempDir()
	if _, ok := crashHost(t, dir, "bound", "5/s,100/h", 3, 2, false); !ok {
		t.Skip("the machine is too slow: the admissions took longer than SyncEvery")
	}
	s = open(t, dir, "bound", "5/s,100/h", localstore.WithBoot(localstore.Options{}, "boot-2"))
	shortCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	if a, err := s.Admit(shortCtx, 1); err == nil {
		a.Release() // the 5/s rule is full until a second after the last sync: not expected, but harmless
	}
	cancel()
	q, err := localstore.Inspect(dir, "bound")
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Rules[1].Used; got != 3+5 && got != 3+5+1 {
		t.Errorf("after the crash the hourly rule holds %d, want 3 kept + 5 that may have been lost = 8", got)
	}
	// The same boot again recovers nothing more.
	_ = s.Close()
	s = open(t, dir, "bound", "5/s,100/h", localstore.WithBoot(localstore.Options{}, "boot-2"))
	shortCtx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
	if a, err := s.Admit(shortCtx, 1); err == nil {
		a.Release()
	}
	cancel()
	if q2, err := localstore.Inspect(dir, "bound"); err != nil || q2.Rules[1].Used > q.Rules[1].Used+1 {
		t.Errorf("a second process in the same boot: hourly rule %v (err %v), want %d or one more", q2.Rules[1].Used, err, q.Rules[1].Used)
	}
}

// TestHostCrashTorn: a crash that left the last transactions' meta pages
// on the disk but not the pages they point to. bbolt checks the meta
// page's checksum, not those pages, so the store may open as it was
// before; the recovery still holds the rule (5 calls in the window, not
// more), or the store is refused as damaged, never silently reset.
func TestHostCrashTorn(t *testing.T) {
	for lost := 1; lost <= 4; lost++ {
		dir := t.TempDir()
		if _, ok := crashHost(t, dir, "torn", "5/h", 5-lost, lost, true); !ok {
			t.Skip("the machine is too slow: the admissions took longer than SyncEvery")
		}
		s, err := localstore.Open(context.Background(), localstore.WithBoot(localstore.Options{Dir: dir, Key: "torn",
			Rules: mustRules(t, "5/h"), Jitter: -1}, "boot-2"))
		if err != nil {
			if !errors.Is(err, throttle.ErrBackend) {
				t.Errorf("lost %d: Open after a torn crash = %v, want nil or an error wrapping throttle.ErrBackend", lost, err)
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		a, err := s.Admit(ctx, 1)
		cancel()
		switch {
		case err == nil:
			a.Release()
			t.Errorf("lost %d: a call admitted after a torn crash, in an hour that already had 5 under 5/h", lost)
		case !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, throttle.ErrBackend):
			t.Errorf("lost %d: Admit after a torn crash = %v, want it to wait, or an error wrapping throttle.ErrBackend", lost, err)
		}
		_ = s.Close()
	}
}

// TestSyncEvery: under the default durability an admission waits for the
// disk only when the last that did is SyncEvery old, so that a crash of
// the host loses at most the admissions of SyncEvery; the first one does.
func TestSyncEvery(t *testing.T) {
	s := open(t, t.TempDir(), "sync", "1000/s", localstore.Options{})
	for range 20 {
		a, err := s.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
	}
	_ = s.Close()
	db, err := bbolt.Open(s.Path(), 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bbolt.Tx) error {
		m := tx.Bucket([]byte("meta"))
		synced, last := m.Get([]byte("synced")), m.Get([]byte("last"))
		if len(synced) != 8 || len(last) != 8 {
			t.Fatalf("meta synced %x, last %x: want 8 bytes each", synced, last)
		}
		d := time.Duration(binary.BigEndian.Uint64(last) - binary.BigEndian.Uint64(synced))
		if d < 0 || d >= localstore.SyncEvery {
			t.Errorf("last admission %v after the last that waited for the disk, want less than %v", d, localstore.SyncEvery)
		}
		return nil
	})
}

// Processes whose margin is fixed (pace exec) keep it in one entry for
// every process with that margin, not one each for as long as their calls
// count, and that entry still protects their calls: a process with no
// margin of its own is kept a window plus the fixed margin after them.
func TestFixedMarginSharesAnEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		const margin = 50 * time.Millisecond
		narrow := open(t, dir, "fixed", "3/s", localstore.Options{})
		t0 := time.Now()
		for i := range 3 {
			s := open(t, dir, "fixed", "3/s", localstore.Options{Margin: margin, FixedMargin: true})
			a, err := s.Admit(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if a.At != t0 {
				t.Errorf("process %d admitted at %v, want at once", i, a.At.Sub(t0))
			}
			a.Release()
			_ = s.Close()
		}
		var keys []string
		db, err := bbolt.Open(filepath.Join(dir, "fixed.db"), 0o600, &bbolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		_ = db.View(func(tx *bbolt.Tx) error {
			c := tx.Bucket([]byte("meta")).Cursor()
			for k, _ := c.Seek([]byte("margin:")); k != nil && bytes.HasPrefix(k, []byte("margin:")); k, _ = c.Next() {
				keys = append(keys, string(k))
			}
			return nil
		})
		_ = db.Close()
		if !slices.Equal(keys, []string{"margin:~50000000"}) {
			t.Errorf("margin entries %q after three processes with a fixed 50ms margin, want one: margin:~50000000", keys)
		}
		a, err := narrow.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := time.Second + margin; a.At.Sub(t0) != want {
			t.Errorf("the process without a margin admitted at %v, want %v: a window plus the fixed margin after them", a.At.Sub(t0), want)
		}

		// A write that would end sooner (here the entry was moved ahead)
		// keeps the later end.
		db, err = bbolt.Open(filepath.Join(dir, "fixed.db"), 0o600, &bbolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var far [16]byte
		binary.BigEndian.PutUint64(far[:8], uint64(margin))
		binary.BigEndian.PutUint64(far[8:], 1<<62)
		if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("margin:~50000000"), far[:]) }); err != nil {
			t.Fatal(err)
		}
		_ = db.Close()
		s := open(t, dir, "fixed", "3/s", localstore.Options{Margin: margin, FixedMargin: true})
		if _, err := s.Admit(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
		db, err = bbolt.Open(filepath.Join(dir, "fixed.db"), 0o600, &bbolt.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_ = db.View(func(tx *bbolt.Tx) error {
			if v := tx.Bucket([]byte("meta")).Get([]byte("margin:~50000000")); !bytes.Equal(v, far[:]) {
				t.Errorf("the fixed margin's entry = %x after a write that ends sooner, want it kept: %x", v, far)
			}
			return nil
		})
	})
}
