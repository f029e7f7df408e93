package contract_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/learn"
	"github.com/pace-cli/pace/throttle/localstore"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// Real time: the stores' waits are real sleeps, so every check here is an
// invariant with generous tolerances. A call that must fit at once is
// given fitWithin; one that must not fit is given a shorter deadline and
// must miss it (its window is an hour, so it cannot fit by chance).
const (
	fitWithin  = 5 * time.Second
	blockedFor = 300 * time.Millisecond
)

// config is what a case asks of the backend it opens.
type config struct {
	spec     string
	inFlight int  // the cap on calls in flight, 0 none
	counters bool // keep every rule in a sliding window counter, not an exact log
}

// backendKind opens a backend for a case.
type backendKind struct {
	name string
	open func(t *testing.T, cf config) throttle.Backend
}

func mustRules(t *testing.T, spec string) []throttle.Rule {
	t.Helper()
	rs, err := throttle.ParseRules(spec)
	if err != nil {
		t.Fatalf("ParseRules(%q) = %v", spec, err)
	}
	return rs
}

func counterAbove(cf config) int {
	if cf.counters {
		return -1
	}
	return 0
}

func openMemory(t *testing.T, cf config) throttle.Backend {
	l, err := throttle.New(throttle.Options{Rules: mustRules(t, cf.spec), MaxInFlight: cf.inFlight, CounterAbove: counterAbove(cf)})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func openLocal(t *testing.T, cf config) throttle.Backend {
	s, err := localstore.Open(context.Background(), localstore.Options{Dir: t.TempDir(), Key: "contract",
		Rules: mustRules(t, cf.spec), GlobalJobs: cf.inFlight, CounterAbove: counterAbove(cf)})
	if err != nil {
		t.Fatalf("localstore.Open(%q) = %v", cf.spec, err)
	}
	return s
}

// redisServer is one redis-server for every case, each on a quota of its
// own.
var (
	redisOnce sync.Once
	redisAddr string
	redisKeys sync.Mutex
	redisSeq  int
)

func openRedis(t *testing.T, cf config) throttle.Backend {
	redistest.Require(t, "redis-server")
	redisOnce.Do(func() {
		// The server outlives the test that started it: it is stopped
		// with the test binary (redistest's parent-death signal).
		redisAddr = redistest.Start(&keepAlive{T: t}).Addr()
	})
	redisKeys.Lock()
	redisSeq++
	key := fmt.Sprintf("contract%d", redisSeq)
	redisKeys.Unlock()
	c := redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 8})
	l, err := redisrate.Open(context.Background(), c, redisrate.Options{Key: key, Rules: mustRules(t, cf.spec),
		GlobalJobs: cf.inFlight, CounterAbove: counterAbove(cf), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("redisrate.Open(%q) = %v", cf.spec, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return l
}

// keepAlive lets redistest.Start register no cleanup on the first test
// to open Redis, so that the server serves every later one.
type keepAlive struct{ *testing.T }

func (k *keepAlive) Cleanup(func()) {}

func openLearner(t *testing.T, cf config) throttle.Backend {
	return learn.New(openMemory(t, cf), mustRules(t, cf.spec), learn.Options{})
}

var kinds = []backendKind{
	{"memory", openMemory},
	{"local", openLocal},
	{"redis", openRedis},
	{"learn", openLearner},
}

// forEach runs f against every backend, with exact logs and with
// counters, each opened as cf says and closed when f ends.
func forEach(t *testing.T, cf config, f func(t *testing.T, b throttle.Backend)) {
	for _, k := range kinds {
		for _, counters := range []bool{false, true} {
			name := k.name + "/log"
			if counters {
				name = k.name + "/counter"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				c := cf
				c.counters = counters
				b := k.open(t, c)
				t.Cleanup(func() { _ = b.Close() })
				f(t, b)
			})
		}
	}
}

func admit(t *testing.T, b throttle.Backend, cost int) throttle.Admission {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fitWithin)
	defer cancel()
	a, err := b.Admit(ctx, cost)
	if err != nil {
		t.Fatalf("Admit(%d) = %v, want it admitted at once", cost, err)
	}
	return a
}

// mustWait checks that a call of the given cost is not admitted for a
// while: the rules (or the cap) hold it back.
func mustWait(t *testing.T, b throttle.Backend, cost int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), blockedFor)
	defer cancel()
	a, err := b.Admit(ctx, cost)
	if err == nil {
		a.Release()
		t.Fatalf("Admit(%d) admitted at %v, want it held back", cost, a.At)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Admit(%d) = %v, want context.DeadlineExceeded", cost, err)
	}
}

// room checks that a cost rule of N 10 counts used now: a call of 10-used
// fits at once, and then one more does not.
func room(t *testing.T, b throttle.Backend, used int) {
	t.Helper()
	if st := b.Stats(); st.Rules[0].Used != used {
		t.Errorf("Stats().Rules[0].Used = %d, want %d", st.Rules[0].Used, used)
	}
	if used < 10 {
		a := admit(t, b, 10-used)
		defer a.Release()
	}
	mustWait(t, b, 1)
}

func inFlight(t *testing.T, b throttle.Backend, want int) {
	t.Helper()
	if got := b.Stats().InFlight; got != want {
		t.Errorf("Stats().InFlight = %d, want %d", got, want)
	}
}

// TestReleaseOnce: releasing twice, or releasing a copy too, gives back
// one slot.
func TestReleaseOnce(t *testing.T) {
	t.Parallel()
	forEach(t, config{spec: "cost:1000/h", inFlight: 2}, func(t *testing.T, b throttle.Backend) {
		a := admit(t, b, 1)
		c := a
		d := admit(t, b, 1)
		inFlight(t, b, 2)
		a.Release()
		a.Release()
		c.Release()
		inFlight(t, b, 1)
		e := admit(t, b, 1) // the slot a gave back
		inFlight(t, b, 2)
		mustWait(t, b, 1) // and only that one
		c.Release()
		mustWait(t, b, 1)
		d.Release()
		e.Release()
		inFlight(t, b, 0)
		if st := b.Stats(); st.Admitted != 3 || st.PeakInFlight != 2 {
			t.Errorf("Stats() Admitted %d, PeakInFlight %d, want 3, 2", st.Admitted, st.PeakInFlight)
		}
	})
}

// TestCorrectLastWins: corrections of an admission and of copies of it,
// up and down, leave the cost the last one said, whichever copy made it.
func TestCorrectLastWins(t *testing.T) {
	t.Parallel()
	type step struct {
		copy bool // on the copy made right after admission, else on the admission
		cost int
	}
	for _, tc := range []struct {
		name  string
		cost  int
		steps []step
	}{
		{"down twice up twice", 5, []step{{false, 1}, {true, 1}, {false, 9}, {true, 9}}},
		{"copy raises after a lowering", 5, []step{{false, 1}, {true, 9}}},
		{"copy lowers after a raise", 5, []step{{false, 9}, {true, 1}}},
		{"copy lowers twice", 6, []step{{false, 4}, {true, 4}, {true, 2}}},
		{"alternating", 2, []step{{false, 7}, {true, 3}, {false, 8}, {true, 6}}},
		{"copy restores the admitted cost", 5, []step{{false, 1}, {true, 5}}},
		{"admission only", 5, []step{{false, 2}, {false, 8}, {false, 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEach(t, config{spec: "cost:10/h"}, func(t *testing.T, b throttle.Backend) {
				a := admit(t, b, tc.cost)
				c := a
				for _, s := range tc.steps {
					p := &a
					if s.copy {
						p = &c
					}
					if err := p.Correct(context.Background(), s.cost); err != nil {
						t.Fatalf("Correct(%d) = %v", s.cost, err)
					}
				}
				a.Release()
				room(t, b, tc.steps[len(tc.steps)-1].cost)
			})
		})
	}
}

// TestClose: Admit after Close fails with ErrClosed; Close twice is fine,
// and a release after it too.
func TestClose(t *testing.T) {
	t.Parallel()
	forEach(t, config{spec: "cost:10/h", inFlight: 1}, func(t *testing.T, b throttle.Backend) {
		a := admit(t, b, 1)
		if err := b.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("Close() again = %v", err)
		}
		a.Release()
		if _, err := b.Admit(context.Background(), 1); !errors.Is(err, throttle.ErrClosed) {
			t.Fatalf("Admit after Close = %v, want ErrClosed", err)
		}
	})
}

// TestCloseWakesWaiter: a caller waiting on the rules when the backend
// closes gets ErrClosed.
func TestCloseWakesWaiter(t *testing.T) {
	t.Parallel()
	forEach(t, config{spec: "cost:10/h"}, func(t *testing.T, b throttle.Backend) {
		a := admit(t, b, 10)
		defer a.Release()
		errc := make(chan error, 1)
		go func() {
			_, err := b.Admit(context.Background(), 1)
			errc <- err
		}()
		time.Sleep(100 * time.Millisecond) // let it queue; either way it must end with ErrClosed
		_ = b.Close()
		select {
		case err := <-errc:
			if !errors.Is(err, throttle.ErrClosed) {
				t.Fatalf("Admit waiting when Close came = %v, want ErrClosed", err)
			}
		case <-time.After(fitWithin):
			t.Fatal("Admit waiting when Close came still waits")
		}
	})
}

// TestCancelRecordsNothing: a caller whose context ends while it waits
// (for the rules, or for a slot) gets ctx's error, holds no slot, and
// the rules count nothing for it.
func TestCancelRecordsNothing(t *testing.T) {
	t.Parallel()
	forEach(t, config{spec: "cost:10/h", inFlight: 2}, func(t *testing.T, b throttle.Backend) {
		a := admit(t, b, 10)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(blockedFor, cancel)
		if _, err := b.Admit(ctx, 1); !errors.Is(err, context.Canceled) {
			t.Fatalf("Admit cancelled while waiting on the rules = %v, want context.Canceled", err)
		}
		inFlight(t, b, 1)
		if err := a.Correct(context.Background(), 7); err != nil {
			t.Fatal(err)
		}
		room(t, b, 7) // nothing was recorded for the cancelled call

		// The cap: a and the call room admitted are released; two
		// slots taken, a third waits and is cancelled.
		a.Release()
		inFlight(t, b, 0)
		if err := a.Correct(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		x, y := admit(t, b, 1), admit(t, b, 1)
		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(blockedFor, cancel)
		if _, err := b.Admit(ctx, 1); !errors.Is(err, context.Canceled) {
			t.Fatalf("Admit cancelled while waiting for a slot = %v, want context.Canceled", err)
		}
		inFlight(t, b, 2)
		x.Release()
		z := admit(t, b, 1)
		inFlight(t, b, 2)
		y.Release()
		z.Release()
		inFlight(t, b, 0)
		room(t, b, 7) // a (1), room's call (3), x, y, z: the cancelled calls count nothing
	})
}

// TestRulesHold: calls admitted concurrently, several corrected lower
// twice (on the admission and on a stale copy), keep every rule when
// checked by throttle.Check with the costs the corrections said.
func TestRulesHold(t *testing.T) {
	t.Parallel()
	const spec = "4/100ms,cost:12/150ms"
	rules := mustRules(t, spec)
	forEach(t, config{spec: spec, inFlight: 6}, func(t *testing.T, b throttle.Backend) {
		var (
			mu    sync.Mutex
			calls []throttle.Call
			wg    sync.WaitGroup
		)
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 1))
				for range 6 {
					cost := 2 + rng.IntN(5)
					a, err := b.Admit(context.Background(), cost)
					if err != nil {
						t.Errorf("Admit(%d) = %v", cost, err)
						return
					}
					c := a
					final := cost
					if rng.IntN(2) == 0 {
						final = cost - 1
						// The admission and a copy made before either
						// correction say the same lower cost.
						if err := a.Correct(context.Background(), final); err != nil {
							t.Errorf("Correct = %v", err)
						}
						if err := c.Correct(context.Background(), final); err != nil {
							t.Errorf("Correct on a copy = %v", err)
						}
					}
					mu.Lock()
					calls = append(calls, throttle.Call{At: a.At, Cost: final})
					mu.Unlock()
					a.Release()
				}
			}()
		}
		wg.Wait()
		for _, r := range throttle.Check(rules, calls) {
			if r.Violations > 0 {
				t.Errorf("rule %s: %d violations among %d calls (peak %d in one window)", r.Rule, r.Violations, len(calls), r.Peak)
			}
		}
		st := b.Stats()
		if st.Admitted != int64(len(calls)) || st.InFlight != 0 || st.PeakInFlight > 6 {
			t.Errorf("Stats() Admitted %d, InFlight %d, PeakInFlight %d; want %d, 0, at most 6", st.Admitted, st.InFlight, st.PeakInFlight, len(calls))
		}
		for i, r := range st.Rules {
			if r.Used < 0 || r.Used > r.Rule.N || r.PeakUsage > 1 {
				t.Errorf("Stats().Rules[%d] Used %d, PeakUsage %.2f: outside [0, %d]", i, r.Used, r.PeakUsage, r.Rule.N)
			}
		}
	})
}

// TestPause: nothing is admitted before a pause ends, and Stats say so.
func TestPause(t *testing.T) {
	t.Parallel()
	forEach(t, config{spec: "cost:10/h"}, func(t *testing.T, b throttle.Backend) {
		const pause = 400 * time.Millisecond
		until := time.Now().Add(pause)
		b.PauseUntil(until, "contract")
		b.PauseUntil(until.Add(-pause/2), "shorter") // never shortens one in force
		a := admit(t, b, 1)
		defer a.Release()
		if now := time.Now(); now.Before(until) {
			t.Errorf("admitted %v before the pause ended", until.Sub(now))
		}
		st := b.Stats()
		if st.Pauses != 1 || st.PauseReason != "contract" || !st.PausedUntil.Equal(until) || st.PauseWaits != 1 {
			t.Errorf("Stats() Pauses %d, PauseReason %q, PausedUntil %v, PauseWaits %d; want 1, %q, %v, 1",
				st.Pauses, st.PauseReason, st.PausedUntil, st.PauseWaits, "contract", until)
		}
	})
}

// TestBadCost: a cost that can never fit fails at once with ErrBadCost
// and holds nothing; so does a correction to a cost below 1.
func TestBadCost(t *testing.T) {
	t.Parallel()
	forEach(t, config{spec: "cost:10/h", inFlight: 1}, func(t *testing.T, b throttle.Backend) {
		for _, cost := range []int{0, -1, 11} {
			if _, err := b.Admit(context.Background(), cost); !errors.Is(err, throttle.ErrBadCost) {
				t.Errorf("Admit(%d) = %v, want ErrBadCost", cost, err)
			}
		}
		inFlight(t, b, 0)
		a := admit(t, b, 3)
		if err := a.Correct(context.Background(), 0); !errors.Is(err, throttle.ErrBadCost) {
			t.Errorf("Correct(0) = %v, want ErrBadCost", err)
		}
		a.Release()
		if st := b.Stats(); st.Admitted != 1 || st.InFlight != 0 {
			t.Errorf("Stats() Admitted %d, InFlight %d; want 1, 0", st.Admitted, st.InFlight)
		}
		room(t, b, 3)
	})
}

// TestSetMargin: the margin set is the margin Stats reports.
func TestSetMargin(t *testing.T) {
	t.Parallel()
	forEach(t, config{spec: "cost:10/h"}, func(t *testing.T, b throttle.Backend) {
		b.SetMargin(250 * time.Millisecond)
		if got := b.Stats().Margin; got != 250*time.Millisecond {
			t.Errorf("Stats().Margin = %v after SetMargin(250ms)", got)
		}
		b.SetMargin(-time.Second)
		if got := b.Stats().Margin; got < 0 {
			t.Errorf("Stats().Margin = %v after SetMargin(-1s), want at least 0", got)
		}
	})
}

// TestHugeMargin: a margin wider than any window counts as
// a century, the longest window a rule may have; it never wraps a window
// around to let calls
// through at once.
func TestHugeMargin(t *testing.T) {
	t.Parallel()
	forEach(t, config{spec: "1/50ms"}, func(t *testing.T, b throttle.Backend) {
		b.SetMargin(math.MaxInt64)
		const century = 100 * 365 * 24 * time.Hour
		if got := b.Stats().Margin; got != century {
			t.Errorf("Stats().Margin = %v after SetMargin(MaxInt64), want %v", got, century)
		}
		a := admit(t, b, 1)
		a.Release()
		mustWait(t, b, 1)
	})
}
