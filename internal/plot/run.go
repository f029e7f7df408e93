package plot

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// A record is one call as the sweeps use it, with instants as nanosecond
// offsets from the run's origin. It is kept small (16 bytes): Render makes
// one per call.
type record struct {
	start   int64
	cost    int32 // max(Call.Cost, 1), at most MaxInt32
	outcome Outcome
}

// weight returns what the record counts for under rule r.
func (rec *record) weight(r Rule) int64 {
	if r.Cost {
		return int64(rec.cost)
	}
	return 1
}

// A run holds the calls and pauses of one picture, sorted, on a time axis
// that starts at origin (the first call) and ends at span.
type run struct {
	origin time.Time
	// span is the length of the time axis in nanoseconds, at least 1:
	// the end of the last call or pause, whichever is later.
	span int64
	// recs are the calls sorted by start.
	recs []record
	// ends are the calls' end offsets, sorted.
	ends []int64
	// totals counts the calls by outcome.
	totals [numOutcomes]int64
	// pauses are the non-empty pauses as [from, to) offsets, sorted by
	// from and clipped to start no earlier than 0.
	pauses [][2]int64
}

// newRun sorts copies of calls and pauses onto one time axis. It leaves
// its arguments unchanged.
func newRun(calls []Call, pauses []Pause) *run {
	r := &run{}
	r.origin, r.recs, r.ends = records(calls)
	if len(calls) == 0 { // the axis starts at the first pause
		first := true
		for _, p := range pauses {
			if p.To.After(p.From) && (first || p.From.Before(r.origin)) {
				r.origin, first = p.From, false
			}
		}
	}
	// Job logs list calls as they end: the ends are then sorted already.
	if !slices.IsSorted(r.ends) {
		slices.Sort(r.ends)
	}
	if len(r.ends) > 0 {
		r.span = r.ends[len(r.ends)-1]
	}
	for i := range r.recs {
		r.totals[r.recs[i].outcome]++
	}
	for _, p := range pauses {
		if !p.To.After(p.From) {
			continue
		}
		from, to := max(offset(p.From, r.origin), 0), offset(p.To, r.origin)
		if to <= 0 {
			continue
		}
		r.pauses = append(r.pauses, [2]int64{from, to})
		r.span = max(r.span, to)
	}
	slices.SortFunc(r.pauses, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	if r.span <= 0 {
		r.span = int64(time.Second) // a single instant: show one second
	}
	return r
}

// records returns the earliest start among calls, the calls as records
// relative to it sorted by start, and their ends (start plus runtime) in
// the order of calls. Records with equal starts come in no particular
// order. It leaves calls unchanged.
func records(calls []Call) (origin time.Time, recs []record, ends []int64) {
	if len(calls) == 0 {
		return time.Time{}, nil, nil
	}
	origin = calls[0].Start
	for i := range calls {
		if calls[i].Start.Before(origin) {
			origin = calls[i].Start
		}
	}
	recs = make([]record, len(calls))
	ends = make([]int64, len(calls))
	for i := range calls {
		c := &calls[i]
		start := offset(c.Start, origin)
		recs[i] = record{start: start, cost: int32(min(max(c.Cost, 1), math.MaxInt32)), outcome: c.Outcome}
		ends[i] = addSat(start, int64(max(c.Runtime, 0)))
	}
	// The check skips the sort for input in order, and costs little
	// next to it otherwise.
	byStart := func(a, b record) int { return cmp.Compare(a.start, b.start) }
	if !slices.IsSortedFunc(recs, byStart) {
		slices.SortFunc(recs, byStart)
	}
	return origin, recs, ends
}

// offset returns t - origin in nanoseconds, saturating as time.Time.Sub does.
func offset(t, origin time.Time) int64 {
	return int64(t.Sub(origin))
}

// addSat returns a+b, or the largest int64 if that overflows.
// It requires b >= 0.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
