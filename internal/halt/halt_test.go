package halt

import (
	"errors"
	"testing"

	"github.com/pace-cli/pace/runner"
)

func TestParse(t *testing.T) {
	for _, s := range []string{"", "never"} {
		if h, err := Parse(s); h != nil || err != nil || h.String() != "never" {
			t.Errorf("Parse(%q) = %v, %v; want no policy", s, h, err)
		}
	}
	for _, s := range []string{"now,fail=1", "soon,success=3", "now,done=10%", "soon,fail=100%"} {
		if h, err := Parse(s); err != nil || h.String() != s {
			t.Errorf("Parse(%q) = %v, %v", s, h, err)
		}
	}
	for _, s := range []string{"now", "later,fail=1", "now,oops=1", "now,fail", "now,fail=0", "now,fail=101%", "now,fail=x", "soon,fail=-1"} {
		if _, err := Parse(s); err == nil || err.Error() != "want never, or now|soon,fail|success|done=N or N%, such as now,fail=1 or soon,fail=10%" {
			t.Errorf("Parse(%q) = %v, want the usage error", s, err)
		}
	}
}

func ok(seq int64) *runner.Result { return &runner.Result{Job: runner.Job{Seq: seq}} }

func failed(seq int64, exit, signal int) *runner.Result {
	return &runner.Result{Job: runner.Job{Seq: seq}, ExitCode: exit, Signal: signal, Err: errors.New("failed")}
}

func TestObserve(t *testing.T) {
	var none *Policy
	if none.Observe(failed(1, 1, 0)) {
		t.Error("no policy halted a run")
	}
	h, _ := Parse("soon,fail=2")
	if h.Observe(failed(1, 1, 0)) || h.Observe(ok(2)) || !h.Observe(failed(3, 1, 0)) {
		t.Error("fail=2 did not halt at the second failure, and only then")
	}
	// A percentage needs 3 items done.
	h, _ = Parse("now,fail=50%")
	if h.Observe(failed(1, 1, 0)) || h.Observe(ok(2)) || !h.Observe(failed(3, 1, 0)) {
		t.Error("fail=50% did not halt at 2 of 3 failed, and only then")
	}
	h, _ = Parse("soon,success=1")
	if h.Observe(failed(1, 1, 0)) || !h.Observe(ok(2)) {
		t.Error("success=1 did not halt at the first success")
	}
}

func TestHaltedBy(t *testing.T) {
	h, _ := Parse("now,fail=1")
	for _, tt := range []struct {
		r    *runner.Result
		code int
	}{
		{failed(4, 3, 0), 3}, {failed(4, -1, 9), 128 + 9}, {failed(4, -1, 0), 1}, {ok(4), 1},
	} {
		got := h.HaltedBy(tt.r)
		if got.Code != tt.code || got.Seq != 4 || !got.Now || got.Spec != "now,fail=1" {
			t.Errorf("HaltedBy(exit %d, signal %d) = %+v, want code %d", tt.r.ExitCode, tt.r.Signal, got, tt.code)
		}
	}
	h, _ = Parse("soon,success=1")
	if got := h.HaltedBy(ok(2)); got.Code != 0 || got.Now {
		t.Errorf("HaltedBy(success) = %+v, want code 0, soon", got)
	}
}

// A run halted by done= or fail= never ends 0 with an item failed: not on
// a done= job that succeeded after one failed, nor on a job that failed
// while a soon halt let the running ones finish. success= does.
func TestHaltedExitCode(t *testing.T) {
	for _, tt := range []struct {
		spec   string
		ok     bool
		failed int64
		want   int
	}{
		{"now,done=2", true, 1, 1},
		{"now,done=2", true, 0, 0},
		{"soon,done=1", true, 1, 1},
		{"now,success=1", true, 3, 0},
		{"now,fail=1", false, 1, 1},
	} {
		h, err := Parse(tt.spec)
		if err != nil {
			t.Fatal(err)
		}
		r := &runner.Result{}
		if !tt.ok {
			r.ExitCode = 1
		}
		if got := h.HaltedBy(r).ExitCode(tt.failed); got != tt.want {
			t.Errorf("%s, halting job ok %v, %d failed: ExitCode = %d, want %d", tt.spec, tt.ok, tt.failed, got, tt.want)
		}
	}
}
