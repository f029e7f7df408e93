package throttle

import (
	"math"
	"slices"
	"sort"
	"time"
)

// This file holds an independent oracle for the limiters: it shares no code
// with them and uses different algorithms (sort + two pointers to audit a
// list of calls, a greedy recurrence over prefix sums to build the fastest
// legal schedule), so tests and `pace audit` can check a limiter's output
// against it.

// CheckResult is what Check found for one rule.
type CheckResult struct {
	// Rule is the rule checked.
	Rule Rule
	// Violations counts the calls that broke the rule: a call at t is a
	// violation when the window (t-Window, t] holds more than N calls (or
	// cost, for a cost rule) up to and including it (calls at equal
	// instants count in input order).
	Violations int
	// First is the index, in the slice given to Check, of the earliest
	// violating call, or -1 when there is none.
	First int
	// Peak is the most calls (or cost) in any window (t-Window, t].
	Peak int
	// PeakUsage is Peak/N; above 1 means the rule was broken.
	PeakUsage float64
}

// Check audits calls against each rule and returns one CheckResult per
// rule, in the order of rules. The calls need not be sorted; Check sorts a
// copy of their order and leaves calls unchanged. A call's Cost counts in
// cost rules (below 1 it counts as 1); count rules count every call as 1.
// Rules should be Valid; for N <= 0 every call is a violation and
// PeakUsage is +Inf (or NaN without calls).
func Check(rules []Rule, calls []Call) []CheckResult {
	// order lists input indices by time; the stable sort keeps equal
	// instants in input order, so "up to and including it" is well defined.
	order := make([]int, len(calls))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return calls[a].At.Compare(calls[b].At) })

	results := make([]CheckResult, len(rules))
	for ri, r := range rules {
		res := CheckResult{Rule: r, First: -1}
		weight := func(i int) int {
			if r.Cost {
				return max(calls[i].Cost, 1)
			}
			return 1
		}
		lo := 0   // first sorted position inside (t-Window, t]
		held := 0 // weight of sorted positions lo..hi
		for hi, idx := range order {
			t := calls[idx].At
			held += weight(idx)
			start := t.Add(-r.Window)
			for lo <= hi && !calls[order[lo]].At.After(start) {
				held -= weight(order[lo])
				lo++
			}
			res.Peak = max(res.Peak, held)
			if held > r.N {
				res.Violations++
				if res.First < 0 {
					res.First = idx
				}
			}
		}
		res.PeakUsage = float64(res.Peak) / float64(r.N)
		results[ri] = res
	}
	return results
}

// schedule returns the admission offsets, relative to the first call, of
// the fastest legal schedule for n calls of cost 1 under all rules at
// once, with at most jobs calls in flight (jobs <= 0: no cap), each
// lasting runtime. See scheduleCosts.
func schedule(rules []Rule, n, jobs int, runtime time.Duration) []time.Duration {
	if n <= 0 {
		return nil
	}
	costs := make([]int, n)
	for i := range costs {
		costs[i] = 1
	}
	return scheduleCosts(rules, costs, jobs, runtime)
}

// scheduleCosts returns the admission offsets, relative to the first
// call, of the fastest legal FIFO schedule for calls of the given costs,
// in that order, under all rules at once, with at most jobs calls in
// flight (jobs <= 0: no cap), each lasting runtime. A finished call frees
// its slot at the instant it ends. Offsets are nondecreasing and saturate
// at the largest Duration; scheduleCosts returns nil for no calls. Rules
// must be Valid and every cost must fit every cost rule.
//
// Admitting every call at the earliest legal instant is optimal for FIFO
// order. Because admissions are sorted, that instant has a closed form:
// for each rule, call k may go once enough of the calls before it have
// left the window that its weight fits (the last of them at offset o
// leaves at o + Window), and once call k-jobs has finished.
func scheduleCosts(rules []Rule, costs []int, jobs int, runtime time.Duration) []time.Duration {
	n := len(costs)
	if n == 0 {
		return nil
	}
	off := make([]time.Duration, n)
	// prefix[r][k] is the weight under rule r of calls 0..k-1.
	prefix := make([][]int64, len(rules))
	for ri, r := range rules {
		p := make([]int64, n+1)
		for k, c := range costs {
			w := int64(1)
			if r.Cost {
				w = int64(max(c, 1))
			}
			p[k+1] = p[k] + w
		}
		prefix[ri] = p
	}
	for k := 0; k < n; k++ {
		var t time.Duration
		if k > 0 {
			t = off[k-1]
		}
		for ri, r := range rules {
			p := prefix[ri]
			// Calls j..k-1 may stay in the window with call k when their
			// weight plus k's is at most N; the earliest such j is the
			// first with p[k+1] - p[j] <= N. Calls before j must have left.
			j := sort.Search(k+1, func(j int) bool { return p[k+1]-p[j] <= int64(r.N) })
			if j > 0 {
				t = max(t, addSat(off[j-1], r.Window))
			}
		}
		if jobs > 0 && k >= jobs {
			t = max(t, addSat(off[k-jobs], max(runtime, 0)))
		}
		off[k] = t
	}
	return off
}

// fastest returns the makespan, from first admission to last admission,
// of the fastest legal schedule for n calls; see schedule for the model.
// It returns 0 when n <= 1.
func fastest(rules []Rule, n, jobs int, runtime time.Duration) time.Duration {
	off := schedule(rules, n, jobs, runtime)
	if len(off) == 0 {
		return 0
	}
	return off[len(off)-1]
}

// addSat returns a+b, or the largest Duration if that overflows.
// It requires a >= 0 and b >= 0.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Plan returns the admission instants of the fastest legal FIFO schedule
// for calls of the given costs that come after past, calls already
// admitted (in any order, none after start), none of them before start,
// with at most jobs of the new calls in flight (jobs <= 0: no cap), each
// lasting runtime. A finished call frees its slot at the instant it ends.
// The instants are nondecreasing; Plan returns nil for no calls. Rules
// must be Valid and every cost must fit every cost rule.
//
// With no past calls it is the fastest schedule of a whole run (the
// makespan is the last instant minus start); with them, how long the rest
// of a run must take, given what it has already spent of each window.
// Admitting every call at the earliest legal instant is optimal for FIFO
// order. Because admissions are sorted, that instant has a closed form:
// for each rule, call k may go once enough of the calls before it have
// left the window that its weight fits (the last of them at instant t
// leaves at t + Window), and once call k-jobs has finished.
func Plan(rules []Rule, past []Call, costs []int, start time.Time, jobs int, runtime time.Duration) []time.Time {
	if len(costs) == 0 {
		return nil
	}
	h := slices.SortedFunc(slices.Values(past), func(a, b Call) int { return a.At.Compare(b.At) })
	n := len(h) + len(costs)
	at := make([]time.Time, n)
	cost := make([]int, n)
	for i, c := range h {
		at[i], cost[i] = c.At, max(c.Cost, 1)
	}
	for i, c := range costs {
		cost[len(h)+i] = max(c, 1)
	}
	prefix := make([][]int64, len(rules))
	for ri, r := range rules {
		p := make([]int64, n+1)
		for k, c := range cost {
			w := int64(1)
			if r.Cost {
				w = int64(c)
			}
			p[k+1] = p[k] + w
		}
		prefix[ri] = p
	}
	for k := len(h); k < n; k++ {
		t := start
		if k > 0 && at[k-1].After(t) {
			t = at[k-1]
		}
		for ri, r := range rules {
			p := prefix[ri]
			j := sort.Search(k+1, func(j int) bool { return p[k+1]-p[j] <= int64(r.N) })
			if j > 0 {
				if free := at[j-1].Add(r.Window); free.After(t) {
					t = free
				}
			}
		}
		if i := k - len(h); jobs > 0 && i >= jobs {
			if free := at[k-jobs].Add(max(runtime, 0)); free.After(t) {
				t = free
			}
		}
		at[k] = t
	}
	return at[len(h):]
}
