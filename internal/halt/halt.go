// Package halt is GNU parallel's --halt for pace: when a run stops early
// (after N or N% of items failed, succeeded or were done), whether the
// running jobs are killed or finish, and the exit code the run ends with.
package halt

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pace-cli/pace/runner"
)

// Policy is --halt, with GNU parallel's meaning: when to stop a run
// early, and how. "soon" starts no more jobs and lets the running ones
// finish; "now" also kills them. The condition counts items whose final
// result failed (fail=), succeeded (success=) or either (done=), as a
// number or a percentage of the items done so far (at least 3 done).
type Policy struct {
	spec    string
	now     bool   // kill the running jobs
	what    string // "fail", "success" or "done"
	n       int    // the count, or the percentage with pct
	pct     bool
	done    int // items done
	matched int // of those, items matching what
}

// Parse reads a --halt value: never, or now|soon,fail|success|done=N[%].
func Parse(s string) (*Policy, error) {
	if s == "" || s == "never" {
		return nil, nil
	}
	bad := func() (*Policy, error) {
		return nil, fmt.Errorf("want never, or now|soon,fail|success|done=N or N%%, such as now,fail=1 or soon,fail=10%%")
	}
	when, cond, ok := strings.Cut(s, ",")
	if !ok {
		return bad()
	}
	h := &Policy{spec: s}
	switch when {
	case "now":
		h.now = true
	case "soon":
	default:
		return bad()
	}
	what, num, ok := strings.Cut(cond, "=")
	switch what {
	case "fail", "success", "done":
		h.what = what
	default:
		return bad()
	}
	if !ok {
		return bad()
	}
	if p, isPct := strings.CutSuffix(num, "%"); isPct {
		num, h.pct = p, true
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || h.pct && n > 100 {
		return bad()
	}
	h.n = n
	return h, nil
}

// Observe counts an item's final result and reports whether the run must
// halt now. A nil *Policy never halts. It is not safe for concurrent use:
// the events' one goroutine observes.
func (h *Policy) Observe(r *runner.Result) bool {
	if h == nil {
		return false
	}
	h.done++
	switch {
	case h.what == "done", h.what == "fail" && !r.OK(), h.what == "success" && r.OK():
		h.matched++
	case !h.pct:
		return false
	}
	if h.pct {
		return h.done >= 3 && h.matched*100 >= h.n*h.done
	}
	return h.matched >= h.n
}

// Halted is why a run halted: the policy and the item that triggered it.
type Halted struct {
	Spec string // the --halt value
	Now  bool   // the running jobs are killed
	Seq  int64  // the item that halted the run
	// Code is the exit code the run ends with: the halting job's, as GNU
	// parallel does (1 for a job that failed without one), or 0. See
	// ExitCode.
	Code int
	// success says the run halted on success= items.
	success bool
}

// ExitCode returns the exit code of the run h halted, in which failed
// items failed: Code, but never 0 with items failed unless the run halted
// on success= (it reached what it was run for, as GNU parallel's
// --halt success= ends 0): a done= halt on a job that succeeded after
// others failed, or a job that failed while the run wound down, is a
// failure (GNU parallel's done= ends with the count of failed jobs).
func (h *Halted) ExitCode(failed int64) int {
	if h.Code == 0 && failed > 0 && !h.success {
		return 1
	}
	return h.Code
}

// HaltedBy returns how the run ends when r made h halt it.
func (h *Policy) HaltedBy(r *runner.Result) *Halted {
	code := 0
	if h.what == "fail" && r.OK() {
		code = 1 // a percentage of failures reached as a success came in
	}
	if !r.OK() {
		code = 1
		switch {
		case r.ExitCode > 0 && r.ExitCode < 256:
			code = r.ExitCode
		case r.Signal > 0:
			code = 128 + r.Signal
		}
	}
	return &Halted{Spec: h.spec, Now: h.now, Seq: r.Job.Seq, Code: code, success: h.what == "success"}
}

// String returns the --halt value the policy was read from, or "never".
func (h *Policy) String() string {
	if h == nil {
		return "never"
	}
	return h.spec
}
