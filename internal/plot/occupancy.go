package plot

import "time"

// A Step is one piece of a rule's occupancy, a step function of time: from
// At until the next Step's At (after the last Step, for ever), the window
// (t-Window, t] holds Used calls, or Used cost for a Cost rule.
type Step struct {
	At time.Time
	// Used is the number of calls, or their summed cost, in the window.
	Used int64
	// Fraction is Used / N: above 1 the rule was broken.
	Fraction float64
}

// Occupancy returns the exact occupancy of rule's window over the calls,
// as the steps where it changes: the first at the earliest call, the last
// back to 0 one Window after the latest call. The calls may come in any
// order and are left unchanged; it returns nil for no calls or a Window
// that is not positive (the window (t, t] is empty). The largest Fraction
// is the rule's peak usage: exactly 1 for a run that used the rule to the
// full and never broke it.
//
// Occupancy sorts a copy of the calls, then sweeps them once with two
// pointers: O(n log n), or O(n) for calls sorted by Start.
func Occupancy(rule Rule, calls []Call) []Step {
	origin, recs, _ := records(calls)
	var steps []Step
	sweepOccupancy(recs, rule, func(at, used int64) {
		if len(steps) > 0 && steps[len(steps)-1].Used == used {
			return
		}
		steps = append(steps, Step{
			At:       origin.Add(time.Duration(at)),
			Used:     used,
			Fraction: float64(used) / float64(rule.N),
		})
	})
	return steps
}

// sweepOccupancy calls emit once for each instant at which a call enters
// or leaves rule's window, in increasing order of at, with the load of
// the window (at-Window, at] after every change at that instant. A call
// that starts at s enters at s and leaves at s+Window. It requires recs
// sorted by start and emits nothing for a Window that is not positive.
func sweepOccupancy(recs []record, rule Rule, emit func(at, used int64)) {
	w := int64(rule.Window)
	if w <= 0 {
		return
	}
	var used int64
	// recs[:in] have entered; recs[:out] have also left. Both pointers
	// only move forward: leave instants are sorted because starts are.
	in, out := 0, 0
	for out < len(recs) {
		at := addSat(recs[out].start, w)
		if in < len(recs) {
			at = min(at, recs[in].start)
		}
		for in < len(recs) && recs[in].start == at {
			used += recs[in].weight(rule)
			in++
		}
		for out < in && addSat(recs[out].start, w) == at {
			used -= recs[out].weight(rule)
			out++
		}
		emit(at, used)
	}
}

// sweepInflight calls emit once for each instant at which a call starts
// or ends, in increasing order of at, with the number of calls in flight
// at that instant: a call is in flight during [start, end). It requires
// recs sorted by start and ends sorted.
func sweepInflight(recs []record, ends []int64, emit func(at, n int64)) {
	var n int64
	in, out := 0, 0
	for out < len(ends) {
		at := ends[out]
		if in < len(recs) {
			at = min(at, recs[in].start)
		}
		for in < len(recs) && recs[in].start == at {
			n++
			in++
		}
		for out < len(ends) && ends[out] == at {
			n--
			out++
		}
		emit(at, n)
	}
}
