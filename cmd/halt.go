package cmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pace-cli/pace/runner"
)

// haltPolicy is --halt, with GNU parallel's meaning: when to stop a run
// early, and how. "soon" starts no more jobs and lets the running ones
// finish; "now" also kills them. The condition counts items whose final
// result failed (fail=), succeeded (success=) or either (done=), as a
// number or a percentage of the items done so far (at least 3 done).
type haltPolicy struct {
	spec    string
	now     bool   // kill the running jobs
	what    string // "fail", "success" or "done"
	n       int    // the count, or the percentage with pct
	pct     bool
	done    int // items done
	matched int // of those, items matching what
}

// parseHalt reads a --halt value: never, or now|soon,fail|success|done=N[%].
func parseHalt(s string) (*haltPolicy, error) {
	if s == "" || s == "never" {
		return nil, nil
	}
	bad := func() (*haltPolicy, error) {
		return nil, fmt.Errorf("want never, or now|soon,fail|success|done=N or N%%, such as now,fail=1 or soon,fail=10%%")
	}
	when, cond, ok := strings.Cut(s, ",")
	if !ok {
		return bad()
	}
	h := &haltPolicy{spec: s}
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

// haltValue is the pflag.Value of --halt.
type haltValue struct{ h **haltPolicy }

func (v haltValue) String() string {
	if v.h == nil || *v.h == nil {
		return "never"
	}
	return (*v.h).spec
}

func (v haltValue) Set(s string) error {
	h, err := parseHalt(s)
	if err != nil {
		return err
	}
	*v.h = h
	return nil
}

func (haltValue) Type() string { return "when,cond=N" }

// observe counts an item's final result and reports whether the run must
// halt now.
func (h *haltPolicy) observe(r *runner.Result) bool {
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

// halted is why a run halted: the policy and the item that triggered it.
type halted struct {
	spec string
	now  bool
	seq  int64
	// code is the exit code the run ends with: the halting job's, as GNU
	// parallel does (1 for a job that failed without one), or 0.
	code int
}

// haltedBy returns how the run ends when r made h halt it.
func (h *haltPolicy) haltedBy(r *runner.Result) *halted {
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
	return &halted{spec: h.spec, now: h.now, seq: r.Job.Seq, code: code}
}
