package summary

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// result returns a finished attempt.
func result(seq int64, attempt int, exit int, runtime time.Duration) *runner.Result {
	return &runner.Result{Job: runner.Job{Seq: seq, Item: "item" + string(rune('0'+seq)), Attempt: attempt},
		Start: time.Unix(1, 0), ExitCode: exit, Runtime: runtime}
}

func TestTallyCounts(t *testing.T) {
	r := throttle.Rule{N: 3, Window: time.Second}
	tl := NewTally([]throttle.Rule{r, {N: 1 << 20, Window: time.Hour}})
	at := func(i int) throttle.Admission { return throttle.Admission{At: time.Unix(int64(i), 0), Cost: 2} }
	show := func(r *runner.Result) FailedItem {
		return FailedItem{Seq: r.Job.Seq, Item: "<" + r.Job.Item + ">", Status: r.Status()}
	}
	events := []runner.Event{
		{Kind: runner.JobStarted, Job: runner.Job{Seq: 1, Attempt: 1}, Admission: at(1), InFlight: 1},
		{Kind: runner.JobStarted, Job: runner.Job{Seq: 2, Attempt: 1}, Admission: at(2), InFlight: 2},
		{Kind: runner.JobFinished, Result: result(1, 1, 1, time.Second), Retry: true, InFlight: 1},
		{Kind: runner.JobStarted, Job: runner.Job{Seq: 1, Attempt: 2}, Admission: at(3), InFlight: 2},
		// Admitted, but could not start: not an attempt.
		{Kind: runner.JobStarted, Job: runner.Job{Seq: 3, Attempt: 1}, Admission: at(4), InFlight: 3},
		{Kind: runner.JobNotStarted, Job: runner.Job{Seq: 3, Attempt: 1}, Result: &runner.Result{Err: runner.ErrNotStarted}, InFlight: 2},
		{Kind: runner.JobFinished, Result: result(2, 1, 0, 3*time.Second), InFlight: 1},
		{Kind: runner.JobFinished, Result: result(1, 2, 2, 2*time.Second), InFlight: 0},
		// An item that failed before it started.
		{Kind: runner.JobDone, Result: &runner.Result{Job: runner.Job{Seq: 4}, ExitCode: -1, Err: errors.New("bad item")}},
	}
	for _, ev := range events {
		tl.Observe(ev)
	}
	tl.Done(result(2, 1, 0, 3*time.Second), show)
	tl.Done(result(1, 2, 2, 2*time.Second), show)
	s := tl.Snapshot()
	if s.OK != 1 || s.Failed != 1 || s.Retried != 1 || s.Attempts != 3 || s.NotStarted != 1 || s.ItemsStarted != 3 ||
		s.Running != 0 || s.PeakRunning != 3 || s.MeanCost != 2 || s.HTTP {
		t.Errorf("snapshot = %+v, want 1 ok, 1 failed, 1 retried, 3 attempts, 1 not started, 3 items started, peak 3, mean cost 2", s)
	}
	if s.P50 != 2*time.Second || s.Max != 3*time.Second {
		t.Errorf("P50, Max = %v, %v; want 2s, 3s", s.P50, s.Max)
	}
	if want := []FailedItem{{Seq: 1, Item: "<item1>", Status: "exit status 2"}}; !slices.Equal(s.FailedItems, want) {
		t.Errorf("FailedItems = %v, want %v (shown as show returns them)", s.FailedItems, want)
	}
	// The admissions remembered for the ETA, the one that did not start
	// included: it was recorded by the rules.
	if len(s.Recent) != 4 || !s.Recent[3].At.Equal(time.Unix(4, 0)) {
		t.Errorf("Recent = %v, want the 4 admissions", s.Recent)
	}
}

func TestTallyRecentIsBounded(t *testing.T) {
	tl := NewTally([]throttle.Rule{{N: 3, Window: time.Second}})
	for i := range 5 {
		tl.Observe(runner.Event{Kind: runner.JobStarted, Job: runner.Job{Seq: int64(i + 1), Attempt: 1},
			Admission: throttle.Admission{At: time.Unix(int64(i), 0), Cost: 1}})
	}
	got := tl.Snapshot().Recent
	slices.SortFunc(got, func(a, b throttle.Call) int { return a.At.Compare(b.At) })
	if len(got) != 3 || !got[0].At.Equal(time.Unix(2, 0)) || !got[2].At.Equal(time.Unix(4, 0)) {
		t.Errorf("Recent = %v, want the last 3 admissions (the largest N)", got)
	}
}

func TestTallyHTTP(t *testing.T) {
	tl := NewTally(nil)
	for _, h := range []*runner.HTTPInfo{
		{StatusCode: 200, Bytes: 100}, {StatusCode: 200, Bytes: 50}, {StatusCode: 429},
		{Conn: "refused"}, {Conn: "refused"}, {}, // no response, cause unknown
	} {
		tl.Observe(runner.Event{Kind: runner.JobFinished, Result: &runner.Result{HTTP: h}})
	}
	s := tl.Snapshot()
	if !s.HTTP || s.Statuses["200"] != 2 || s.Statuses["429"] != 1 || s.NoResponse != 3 || s.Conns["refused"] != 2 || len(s.Conns) != 1 || s.Bytes != 150 {
		t.Errorf("snapshot = %+v, want 200 ×2, 429 ×1, 3 without response (2 refused), 150 bytes", s)
	}
}

func TestTallyFailedItemsBounded(t *testing.T) {
	tl := NewTally(nil)
	for i := range MaxFailedItems + 10 {
		tl.Done(result(int64(i+1), 1, 1, 0), func(r *runner.Result) FailedItem { return FailedItem{Seq: r.Job.Seq} })
	}
	if s := tl.Snapshot(); s.Failed != MaxFailedItems+10 || len(s.FailedItems) != MaxFailedItems {
		t.Errorf("Failed = %d, %d named; want %d, %d named", s.Failed, len(s.FailedItems), MaxFailedItems+10, MaxFailedItems)
	}
}

// TestTallyFailedItemTextBounded: a failed item is named in at most
// MaxItemShown bytes. Items of up to 1 MiB (which exec refuses past 128
// KiB, so they fail) were kept whole: 100 of them made a summary file of
// 90 MB, and as much memory held through the run.
func TestTallyFailedItemTextBounded(t *testing.T) {
	tl := NewTally(nil)
	long := strings.Repeat("é", 1<<19) // 1 MiB
	tl.Done(result(1, 1, 1, 0), func(r *runner.Result) FailedItem { return FailedItem{Seq: 1, Item: long, Status: long} })
	tl.Done(result(2, 1, 1, 0), func(r *runner.Result) FailedItem { return FailedItem{Seq: 2, Item: "short", Status: "exit status 1"} })
	s := tl.Snapshot()
	got := s.FailedItems[0]
	for _, v := range []string{got.Item, got.Status} {
		if len(v) > MaxItemShown || !utf8.ValidString(v) || !strings.HasPrefix(v, "éé") || !strings.HasSuffix(v, "…(cut: 1048576 bytes)") {
			t.Errorf("failed item of 1 MiB named in %d bytes, ending %q; want at most %d, valid UTF-8, saying it was cut", len(v), v[max(0, len(v)-30):], MaxItemShown)
		}
	}
	if s.FailedItems[1].Item != "short" || s.FailedItems[1].Status != "exit status 1" {
		t.Errorf("short failed item = %+v, want it whole", s.FailedItems[1])
	}
}
