package redisrate_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// Live tests of cost rules: the cost log (a sorted set of "id:cost"
// members plus a ":sum" key), the counter, and Admission.Correct.

// modes are the two forms a cost rule is kept in.
var modes = []struct {
	name string
	o    redisrate.Options
}{{"log", redisrate.Options{}}, {"counter", redisrate.Options{CounterAbove: -1}}}

func TestLiveWeighted(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const rules = "5/100ms,cost:40/100ms"
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			var ls []*redisrate.Limiter
			for range 3 {
				ls = append(ls, liveOpen(t, liveClient(t, srv.Addr()), "weighted-"+m.name, rules, m.o))
			}
			calls := hammer(t, ls, 2, 30, func() int { return 1 + rand.IntN(25) })
			if len(calls) != 30 {
				t.Fatalf("%d admissions, want 30", len(calls))
			}
			checkCalls(t, rules, calls)
			if admitted, _ := totals(ls); admitted != 30 {
				t.Errorf("Stats().Admitted sums to %d, want 30", admitted)
			}
		})
	}
}

func TestLiveCorrect(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			// A lower cost frees room at once (the window is long enough
			// for every call here to stay in it).
			l := liveOpen(t, liveClient(t, srv.Addr()), "lower-"+m.name, "cost:10/1m", m.o)
			a, err := l.Admit(ctx, 8)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Correct(context.Background(), 2); err != nil {
				t.Fatalf("Correct(2) = %v", err)
			}
			if s := l.Stats(); s.Rules[0].Used != 2 {
				t.Errorf("Used = %d after Correct(2), want 2", s.Rules[0].Used)
			}
			key := l.Keys()[1]
			if m.name == "log" {
				if members := do(t, srv, "ZRANGE", key, "0", "-1"); !strings.HasSuffix(members, ":2") || strings.Contains(members, "\n") {
					t.Errorf("ZRANGE %s = %q, want one member of cost 2", key, members)
				}
				if sum := do(t, srv, "GET", key+":sum"); sum != "2" {
					t.Errorf("GET %s:sum = %s, want 2", key, sum)
				}
			} else if total := do(t, srv, "HGET", key, "total"); total != "2" {
				t.Errorf("HGET %s total = %s, want 2", key, total)
			}
			if _, err := l.Admit(ctx, 8); err != nil {
				t.Fatal(err)
			}
			if s := l.Stats(); s.Waits != 0 || s.Rules[0].Used != 10 {
				t.Errorf("Stats() = %+v, want a cost of 8 admitted at once beside the corrected 2", s)
			}

			// A higher cost makes the next call wait as the true costs require.
			const rules = "cost:10/200ms"
			l = liveOpen(t, liveClient(t, srv.Addr()), "raise-"+m.name, rules, m.o)
			first, err := l.Admit(ctx, 2)
			if err != nil {
				t.Fatal(err)
			}
			if err := first.Correct(context.Background(), 9); err != nil {
				t.Fatalf("Correct(9) = %v", err)
			}
			if s := l.Stats(); s.Rules[0].Used != 9 {
				t.Errorf("Used = %d after Correct(9), want 9", s.Rules[0].Used)
			}
			second, err := l.Admit(ctx, 2)
			if err != nil {
				t.Fatal(err)
			}
			checkCalls(t, rules, []throttle.Call{{At: first.At, Cost: first.Cost}, {At: second.At, Cost: second.Cost}})
			if s := l.Stats(); s.Waits != 1 || s.Rules[0].Waits != 1 {
				t.Errorf("Stats() = %+v, want the second call to wait for the corrected first", s)
			}
		})
	}
}

// Every key a cost rule uses expires once its window has passed: nothing
// leaks.
func TestLiveKeysExpire(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	const rules = "5/500ms,cost:40/500ms"
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			o := m.o
			o.GlobalJobs = 1
			l := liveOpen(t, liveClient(t, srv.Addr()), "expire-"+m.name, rules, o)
			a, err := l.Admit(ctx, 7)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Correct(context.Background(), 9); err != nil {
				t.Fatal(err)
			}
			// rules, 5/500ms and its unused :sum, cost:40/500ms and its :sum
			// (the cost log's sum, or the costs the counter corrected),
			// margins, slots.
			keys := l.Keys()
			want := map[string]int{keys[0]: 502, keys[1]: 502, keys[3]: 502, keys[4]: 502, keys[5]: 502, keys[6]: 15001}
			for i, key := range keys {
				most, used := want[key]
				ttl, _ := strconv.Atoi(do(t, srv, "PTTL", key))
				switch {
				case !used && ttl != -2:
					t.Errorf("key %d %s: PTTL %d, want no such key", i, key, ttl)
				case used && (ttl <= 0 || ttl > most):
					t.Errorf("key %d %s: PTTL %d, want within (0, %d]", i, key, ttl, most)
				}
			}
			a.Release()
			time.Sleep(600 * time.Millisecond)
			for _, key := range keys[:6] {
				if n := do(t, srv, "EXISTS", key); n != "0" {
					t.Errorf("EXISTS %s = %s after the window passed, want 0", key, n)
				}
			}
			// The slots key holds the released lease's mark, no slot,
			// until the lease would have run out.
			if n := do(t, srv, "ZCOUNT", keys[6], "0", "+inf"); n != "0" {
				t.Errorf("%s holds %s slots after the release, want 0", keys[6], n)
			}
			if ttl, _ := strconv.Atoi(do(t, srv, "PTTL", keys[6])); ttl > 15001 {
				t.Errorf("%s: PTTL %d after the release, want at most the lease's 15001", keys[6], ttl)
			}
		})
	}
}

// A counter keeps the cost it holds for each call corrected only while
// the call's bucket is held, even while corrections keep its key alive:
// a correction drops the costs of calls whose bucket has gone.
func TestLiveCounterCorrectionsTrimmed(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	l := liveOpen(t, liveClient(t, srv.Addr()), "trim-corrections", "cost:1000/1s", redisrate.Options{CounterAbove: -1})
	fixed := l.Keys()[2]
	// Calls 600ms apart, of costs 5 corrected to 3, 4 and 6: the third
	// comes once the first has left the window, the second still in it.
	for i, to := range []int{3, 4, 6} {
		if i > 0 {
			time.Sleep(600 * time.Millisecond)
		}
		a, err := l.Admit(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Correct(ctx, to); err != nil {
			t.Fatal(err)
		}
	}
	ms := strings.Split(do(t, srv, "ZRANGE", fixed, "0", "-1"), "\n")
	if slices.ContainsFunc(ms, func(m string) bool { return strings.HasSuffix(m, ":3") }) || !slices.ContainsFunc(ms, func(m string) bool { return strings.HasSuffix(m, ":6") }) {
		t.Errorf("ZRANGE %s = %q, want the third call's cost, not the first's", fixed, ms)
	}
}

// The sum of a cost log never outlives the log: once every call has left
// the window and the log has expired, nothing is held, even if the sum was
// rewritten (by a refused call or a correction) after the log's expiry was
// last set.
func TestLiveCostSumExpiresWithTheLog(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	const rules = "cost:10/200ms"
	t.Run("after a correction", func(t *testing.T) {
		t.Parallel()
		l := liveOpen(t, liveClient(t, srv.Addr()), "sum-correct", rules, redisrate.Options{})
		a, err := l.Admit(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if err := a.Correct(context.Background(), 6); err != nil {
			t.Fatal(err)
		}
		// The call left at 200ms; the log and its sum expired at about
		// 301ms, together.
		time.Sleep(250 * time.Millisecond)
		before := l.Stats().Store.RoundTrips
		if _, err := l.Admit(ctx, 5); err != nil {
			t.Fatal(err)
		}
		if s := l.Stats(); s.Waits != 0 || s.Store.RoundTrips != before+1 || s.Rules[0].Used != 5 {
			t.Errorf("Stats() = %+v after %d round trips, want one admitted at once, holding 5",
				s, s.Store.RoundTrips-before)
		}
	})
	t.Run("after a refusal", func(t *testing.T) {
		t.Parallel()
		const rules = "cost:10/400ms"
		l := liveOpen(t, liveClient(t, srv.Addr()), "sum-refused", rules, redisrate.Options{})
		if _, err := l.Admit(ctx, 6); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if _, err := l.Admit(ctx, 4); err != nil {
			t.Fatal(err)
		}
		// The first call has left, the second holds 4 until about 600ms:
		// a call of 7 is refused (and trims the first).
		time.Sleep(220 * time.Millisecond)
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		if _, err := l.Admit(short, 7); err == nil {
			t.Fatal("a cost of 7 beside 4 admitted, want it refused")
		}
		// Both calls have left; the log expired at about 601ms.
		time.Sleep(280 * time.Millisecond)
		before := l.Stats()
		if _, err := l.Admit(ctx, 7); err != nil {
			t.Fatal(err)
		}
		if s := l.Stats(); s.Waits != before.Waits || s.Store.RoundTrips != before.Store.RoundTrips+1 || s.Rules[0].Used != 7 {
			t.Errorf("Stats() = %+v after %d round trips, want one admitted at once, holding 7",
				s, s.Store.RoundTrips-before.Store.RoundTrips)
		}
	})
}
