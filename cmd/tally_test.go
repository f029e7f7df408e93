package cmd

import (
	"errors"
	"github.com/pace-cli/pace/internal/summary"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

func TestDurationsExact(t *testing.T) {
	var d durations
	if got := d.quantile(0.5); got != 0 {
		t.Errorf("quantile(0.5) of nothing = %v, want 0", got)
	}
	for i := 100; i >= 1; i-- {
		d.add(time.Duration(i) * time.Millisecond)
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.95, 95 * time.Millisecond}, {1, 100 * time.Millisecond}, {0.001, time.Millisecond}} {
		if got := d.quantile(tt.q); got != tt.want {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if d.max != 100*time.Millisecond {
		t.Errorf("max = %v, want 100ms", d.max)
	}
	d.add(-time.Second) // a clock step: counted as 0
	if got := d.quantile(0.001); got != 0 {
		t.Errorf("quantile(0.001) after a negative duration = %v, want 0", got)
	}
}

func TestDurationsBoundedAndClose(t *testing.T) {
	var d durations
	const n = 200_000
	for i := 1; i <= n; i++ {
		d.add(time.Duration(i) * time.Microsecond)
	}
	if d.exact != nil || len(d.buckets) > 2000 {
		t.Errorf("kept %d exact values and %d buckets, want bounded memory", len(d.exact), len(d.buckets))
	}
	for _, q := range []float64{0.5, 0.95} {
		want := q * n * float64(time.Microsecond)
		if got := float64(d.quantile(q)); math.Abs(got-want)/want > 0.01 {
			t.Errorf("quantile(%v) = %v, want within 1%% of %v", q, time.Duration(got), time.Duration(want))
		}
	}
	if d.max != n*time.Microsecond {
		t.Errorf("max = %v, want exactly %v", d.max, n*time.Microsecond)
	}
}

// result returns a finished attempt.
func result(seq int64, attempt int, exit int, runtime time.Duration) *runner.Result {
	return &runner.Result{Job: runner.Job{Seq: seq, Item: "item" + string(rune('0'+seq)), Attempt: attempt},
		Start: time.Unix(1, 0), ExitCode: exit, Runtime: runtime}
}

func TestTallyCounts(t *testing.T) {
	r := throttle.Rule{N: 3, Window: time.Second}
	tl := newTally([]throttle.Rule{r, {N: 1 << 20, Window: time.Hour}})
	if tl.keep != maxRecent {
		t.Errorf("keep = %d, want the largest N up to %d", tl.keep, maxRecent)
	}
	at := func(i int) throttle.Admission { return throttle.Admission{At: time.Unix(int64(i), 0), Cost: 2} }
	show := func(s string) string { return "<" + s + ">" }
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
		tl.observe(ev)
	}
	tl.done(result(2, 1, 0, 3*time.Second), show)
	tl.done(result(1, 2, 2, 2*time.Second), show)
	s := tl.snapshot()
	if s.OK != 1 || s.Failed != 1 || s.Retried != 1 || s.Attempts != 3 || s.NotStarted != 1 || s.ItemsStarted != 3 ||
		s.Running != 0 || s.PeakRunning != 3 || s.MeanCost != 2 || s.HTTP {
		t.Errorf("snapshot = %+v, want 1 ok, 1 failed, 1 retried, 3 attempts, 1 not started, 3 items started, peak 3, mean cost 2", s)
	}
	if s.P50 != 2*time.Second || s.Max != 3*time.Second {
		t.Errorf("P50, Max = %v, %v; want 2s, 3s", s.P50, s.Max)
	}
	if want := []summary.FailedItem{{Seq: 1, Item: "<item1>", Status: "exit status 2"}}; !slices.Equal(s.FailedItems, want) {
		t.Errorf("FailedItems = %v, want %v (shown as show returns them)", s.FailedItems, want)
	}
	// The admissions remembered for the ETA, the one that did not start
	// included: it was recorded by the rules.
	if len(s.Recent) != 4 || !s.Recent[3].At.Equal(time.Unix(4, 0)) {
		t.Errorf("Recent = %v, want the 4 admissions", s.Recent)
	}
}

func TestTallyRecentIsBounded(t *testing.T) {
	tl := newTally([]throttle.Rule{{N: 3, Window: time.Second}})
	for i := range 5 {
		tl.observe(runner.Event{Kind: runner.JobStarted, Job: runner.Job{Seq: int64(i + 1), Attempt: 1},
			Admission: throttle.Admission{At: time.Unix(int64(i), 0), Cost: 1}})
	}
	got := tl.snapshot().Recent
	slices.SortFunc(got, func(a, b throttle.Call) int { return a.At.Compare(b.At) })
	if len(got) != 3 || !got[0].At.Equal(time.Unix(2, 0)) || !got[2].At.Equal(time.Unix(4, 0)) {
		t.Errorf("Recent = %v, want the last 3 admissions (the largest N)", got)
	}
	if none := newTally(nil); none.keep != 0 {
		t.Errorf("newTally(no rules).keep = %d, want 0", none.keep)
	}
}

func TestTallyHTTP(t *testing.T) {
	tl := newTally(nil)
	for _, h := range []*runner.HTTPInfo{
		{StatusCode: 200, Bytes: 100}, {StatusCode: 200, Bytes: 50}, {StatusCode: 429},
		{Conn: "refused"}, {Conn: "refused"}, {}, // no response, cause unknown
	} {
		tl.observe(runner.Event{Kind: runner.JobFinished, Result: &runner.Result{HTTP: h}})
	}
	s := tl.snapshot()
	if !s.HTTP || s.Statuses["200"] != 2 || s.Statuses["429"] != 1 || s.NoResponse != 3 || s.Conns["refused"] != 2 || len(s.Conns) != 1 || s.Bytes != 150 {
		t.Errorf("snapshot = %+v, want 200 ×2, 429 ×1, 3 without response (2 refused), 150 bytes", s)
	}
}

func TestTallyFailedItemsBounded(t *testing.T) {
	tl := newTally(nil)
	for i := range maxFailedItems + 10 {
		tl.done(result(int64(i+1), 1, 1, 0), func(s string) string { return s })
	}
	if s := tl.snapshot(); s.Failed != maxFailedItems+10 || len(s.FailedItems) != maxFailedItems {
		t.Errorf("Failed = %d, %d named; want %d, %d named", s.Failed, len(s.FailedItems), maxFailedItems+10, maxFailedItems)
	}
}
