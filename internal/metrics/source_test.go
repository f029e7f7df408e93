package metrics

import (
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/summary"
	"github.com/pace-cli/pace/throttle"
)

func TestSource(t *testing.T) {
	var src Source
	if got := src.Get(); got.Admitted != 0 || got.Rules != nil {
		t.Errorf("Get before Set = %+v, want zeros", got)
	}
	src.Set(func() Snapshot { return Snapshot{Admitted: 3} })
	if got := src.Get(); got.Admitted != 3 {
		t.Errorf("Get after Set = %+v, want the run's state", got)
	}
}

// TestOf: the metrics carry the tally's and the backend's numbers, each
// rule in the order given, durations in seconds.
func TestOf(t *testing.T) {
	rules, err := throttle.ParseRules("5/s,cost:100/m")
	if err != nil {
		t.Fatal(err)
	}
	st := throttle.Stats{
		Admitted: 9, Pauses: 1, PauseWaitTime: 1500 * time.Millisecond, Margin: 20 * time.Millisecond,
		Rules: []throttle.RuleStats{
			{Rule: rules[0], Usage: 0.4, PeakUsage: 1, Waits: 2, WaitTime: 250 * time.Millisecond},
			{Rule: rules[1], Usage: 0.1, PeakUsage: 0.3},
		},
	}
	st.Store.Name, st.Store.RoundTrips, st.Store.Failures = "redis", 12, 1
	got := Of(summary.Snapshot{OK: 5, Failed: 2, Retried: 1, NotStarted: 1, Running: 3}, st)
	if got.Admitted != 9 || got.OK != 5 || got.Failed != 2 || got.Retried != 1 || got.NotStarted != 1 || got.InFlight != 3 ||
		got.Pauses != 1 || got.PauseSeconds != 1.5 || got.MarginSeconds != 0.02 || got.Store != "redis" || got.RoundTrips != 12 || got.Failures != 1 {
		t.Errorf("Of = %+v", got)
	}
	want := []Rule{{Rule: "5/s", Usage: 0.4, PeakUsage: 1, Waits: 2, WaitSeconds: 0.25}, {Rule: "cost:100/m", Usage: 0.1, PeakUsage: 0.3}}
	if len(got.Rules) != 2 || got.Rules[0] != want[0] || got.Rules[1] != want[1] {
		t.Errorf("Rules = %+v, want %+v", got.Rules, want)
	}
}
