package redisrate_test

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// One attempt for a batch of calls at a window that holds some already
// admits, in order, exactly the calls that fit, each its own member, and
// stops at the first that does not: nothing is recorded for it or the
// calls after it (even one that would fit), in each of the three forms a
// rule is kept in (count log, cost log, counter).
func TestLiveBatch(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name    string
		counter bool
		first   []int // a batch that fits
		second  []int // a batch that does not
		want    int   // calls of second admitted
		held    []int // each rule's weight after, given order
	}{
		// 5/10s holds 3 then takes 2 of 4.
		{"count", false, []int{1, 1, 1}, []int{1, 1, 1, 1}, 2, []int{5}},
		// cost:10/10s holds 2+3, then takes 4 (9) and stops at 2 (11),
		// although the 1 after it would fit.
		{"cost", false, []int{2, 3}, []int{4, 2, 1}, 1, []int{9, 3}},
		{"count-counter", true, []int{1, 1, 1}, []int{1, 1, 1, 1}, 2, []int{5}},
		{"cost-counter", true, []int{2, 3}, []int{4, 2, 1}, 1, []int{9, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := "5/10s"
			if len(tc.held) == 2 {
				spec = "cost:10/10s,5/10s"
			}
			o := redisrate.Options{}
			if tc.counter {
				o.CounterAbove = -1
			}
			l := liveOpen(t, liveClient(t, srv.Addr()), "batch-"+tc.name, spec, o)
			n, _, _, _, err := redisrate.AdmitBatch(l, tc.first)
			if err != nil || n != len(tc.first) {
				t.Fatalf("AdmitBatch(%v) at an empty window = %d, %v; want all admitted", tc.first, n, err)
			}
			start := time.Now()
			n, wait, rule, used, err := redisrate.AdmitBatch(l, tc.second)
			if err != nil || n != tc.want || !slices.Equal(used, tc.held) {
				t.Fatalf("AdmitBatch(%v) = %d admitted, used %v, %v; want %d, used %v", tc.second, n, used, err, tc.want, tc.held)
			}
			// A counter may refuse up to a bucket (10s/1024) longer.
			if wait < 9*time.Second-time.Since(start) || wait > 10*time.Second+10*time.Millisecond || rule != 0 {
				t.Errorf("first refused waits %v on rule %d, want about 10s on rule 0", wait, rule)
			}
			n, _, _, used, err = redisrate.AdmitBatch(l, tc.second[tc.want:])
			if err != nil || n != 0 || !slices.Equal(used, tc.held) {
				t.Errorf("AdmitBatch(%v) at the full window = %d admitted, used %v, %v; want none, %v", tc.second[tc.want:], n, used, err, tc.held)
			}
			// What Redis holds: every admitted call, each its own member,
			// and nothing of the calls refused. Redis keeps the rules
			// sorted: the count rule first.
			keys := l.Keys()
			calls := len(tc.first) + tc.want
			for j := range len(tc.held) {
				key := keys[1+2*j]
				want := calls
				if j == 1 {
					want = tc.held[0] // the cost held
				}
				if tc.counter {
					if got := do(t, srv, "HGET", key, "total"); got != strconv.Itoa(want) {
						t.Errorf("HGET %s total = %s, want %d", key, got, want)
					}
					continue
				}
				if got := do(t, srv, "ZCARD", key); got != strconv.Itoa(calls) {
					t.Errorf("ZCARD %s = %s, want %d", key, got, calls)
				}
				if j == 1 {
					if got := do(t, srv, "GET", keys[2+2*j]); got != strconv.Itoa(want) {
						t.Errorf("GET %s = %s, want the cost held, %d", keys[2+2*j], got, want)
					}
				}
			}
		})
	}
}

// Many callers per process queue together and are admitted in batches:
// the fleet still keeps every rule, for calls of one cost and of many,
// with the rules kept in logs or counters.
func TestLiveBatchesKeepRules(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const rules = "10/100ms,25/300ms,cost:60/100ms"
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			var ls []*redisrate.Limiter
			for range 3 {
				ls = append(ls, liveOpen(t, liveClient(t, srv.Addr()), "batches-"+m.name, rules, m.o))
			}
			calls := hammer(t, ls, 6, 90, func() int { return 1 + rand.IntN(12) })
			if len(calls) != 90 {
				t.Fatalf("%d admissions, want 90", len(calls))
			}
			checkCalls(t, rules, calls)
			admitted, trips := totals(ls)
			if admitted != 90 {
				t.Errorf("Stats().Admitted sums to %d, want 90", admitted)
			}
			t.Logf("90 admissions by 3 clients of 6 callers, %.2f round trips per admission", float64(trips)/float64(admitted))
		})
	}
}
