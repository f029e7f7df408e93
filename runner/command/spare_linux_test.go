package command

import (
	"context"
	"runtime"
	"testing"

	"github.com/pace-cli/pace/runner"
)

// The Executor raises GOMAXPROCS by its starters only when asked
// (SpareProcs, which pace run sets): a library user's own setting stays.
func TestSpareProcsOnlyWhenAsked(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, spare := range []bool{false, true} {
		runtime.GOMAXPROCS(2)
		e := &Executor{SpareProcs: spare}
		res := e.Execute(context.Background(), &runner.Job{Seq: 1, Argv: []string{"true"}})
		e.Close()
		if res.Err != nil || res.ExitCode != 0 {
			t.Fatalf("true: %v, exit %d", res.Err, res.ExitCode)
		}
		want := 2
		if spare {
			want = 2 + starters
		}
		if got := runtime.GOMAXPROCS(0); got != want {
			t.Errorf("SpareProcs %v: GOMAXPROCS %d after a job, want %d", spare, got, want)
		}
	}
}
