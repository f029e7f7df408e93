package throttle

import (
	"math"
	"slices"
	"time"
)

// This file holds an independent oracle for the limiters: it shares no code
// with them and uses different algorithms (sort + two pointers to audit a
// list of instants, a closed-form greedy recurrence to build the fastest
// legal schedule), so tests and `pace audit` can check a limiter's output
// against it.

// CheckResult is what Check found for one rule.
type CheckResult struct {
	// Rule is the rule checked.
	Rule Rule
	// Violations counts the calls that broke the rule: a call at t is a
	// violation when the window (t-Window, t] holds more than N calls up
	// to and including it (calls at equal instants count in input order).
	Violations int
	// First is the index, in the slice given to Check, of the earliest
	// violating call, or -1 when there is none.
	First int
	// Peak is the largest number of calls in any window (t-Window, t].
	Peak int
	// PeakUsage is Peak/N; above 1 means the rule was broken.
	PeakUsage float64
}

// Check audits the call instants times against each rule and returns one
// CheckResult per rule, in the order of rules. The instants need not be
// sorted; Check sorts a copy and leaves times unchanged. Rules should be
// Valid; for N <= 0 every call is a violation and PeakUsage is +Inf (or
// NaN without calls).
func Check(rules []Rule, times []time.Time) []CheckResult {
	// order lists input indices by time; the stable sort keeps equal
	// instants in input order, so "up to and including it" is well defined.
	order := make([]int, len(times))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return times[a].Compare(times[b]) })

	results := make([]CheckResult, len(rules))
	for ri, r := range rules {
		res := CheckResult{Rule: r, First: -1}
		lo := 0 // first sorted position inside (t-Window, t]
		for hi, idx := range order {
			t := times[idx]
			start := t.Add(-r.Window)
			for lo < hi && !times[order[lo]].After(start) {
				lo++
			}
			count := hi - lo + 1
			if r.Window <= 0 {
				count = 0 // the window (t, t] is empty
			}
			res.Peak = max(res.Peak, count)
			if count > r.N {
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

// Schedule returns the admission offsets, relative to the first call, of
// the fastest legal schedule for n calls under all rules at once, with at
// most jobs calls in flight (jobs <= 0: no cap), each lasting runtime.
// A finished call frees its slot at the instant it ends. Offsets are
// nondecreasing and saturate at the largest Duration; Schedule returns
// nil when n <= 0. Rules must be Valid.
//
// Admitting every call at the earliest legal instant is optimal here, and
// because admissions are sorted that instant has a closed form: call k may
// go once call k-N has left every rule's window (offset[k-N] + Window)
// and call k-jobs has finished (offset[k-jobs] + runtime).
func Schedule(rules []Rule, n, jobs int, runtime time.Duration) []time.Duration {
	if n <= 0 {
		return nil
	}
	off := make([]time.Duration, n)
	for k := 1; k < n; k++ {
		t := off[k-1]
		for _, r := range rules {
			if k >= r.N {
				t = max(t, addSat(off[k-r.N], r.Window))
			}
		}
		if jobs > 0 && k >= jobs {
			t = max(t, addSat(off[k-jobs], max(runtime, 0)))
		}
		off[k] = t
	}
	return off
}

// Fastest returns the makespan, from first admission to last admission,
// of the fastest legal schedule for n calls; see Schedule for the model.
// It returns 0 when n <= 1.
func Fastest(rules []Rule, n, jobs int, runtime time.Duration) time.Duration {
	off := Schedule(rules, n, jobs, runtime)
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
