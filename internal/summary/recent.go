package summary

import (
	"slices"

	"github.com/pace-cli/pace/throttle"
)

// maxRecent bounds the admissions a Recent remembers.
const maxRecent = 1 << 16

// Recent remembers a run's latest admissions, as many as the largest
// rule's N (up to maxRecent), so that an ETA can replay each rule's
// window (throttle.Plan's past calls). The zero value remembers nothing;
// NewRecent sizes one for rules. It is not safe for concurrent use.
type Recent struct {
	calls []throttle.Call // a ring once full
	next  int             // the oldest call, once full
	keep  int
}

// NewRecent returns a Recent that remembers enough admissions to replay
// the windows of rules.
func NewRecent(rules []throttle.Rule) Recent {
	var r Recent
	for _, rule := range rules {
		r.keep = max(r.keep, min(rule.N, maxRecent))
	}
	return r
}

// Keep is how many admissions r remembers at most.
func (r *Recent) Keep() int { return r.keep }

// Add remembers c, forgetting the oldest admission once full.
func (r *Recent) Add(c throttle.Call) {
	switch {
	case r.keep == 0:
	case len(r.calls) < r.keep:
		r.calls = append(r.calls, c)
	default:
		r.calls[r.next] = c
		r.next = (r.next + 1) % r.keep
	}
}

// Seed remembers earlier runs' admissions (a job log's), oldest first,
// so that an ETA replays the windows they still fill: a resumed run waits
// for them as the backend does.
func (r *Recent) Seed(calls []throttle.Call) {
	if r.keep == 0 || len(calls) == 0 {
		return
	}
	calls = slices.SortedFunc(slices.Values(calls), func(a, b throttle.Call) int { return a.At.Compare(b.At) })
	for _, c := range calls[max(len(calls)-r.keep, 0):] {
		r.Add(c)
	}
}

// Calls returns a copy of the admissions remembered, in no set order.
func (r *Recent) Calls() []throttle.Call { return slices.Clone(r.calls) }
