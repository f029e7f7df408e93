package cmd

import (
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

func ruleStats(n int, w time.Duration, used int) throttle.RuleStats {
	return throttle.RuleStats{Rule: throttle.Rule{N: n, Window: w}, Used: used}
}

func TestETAReplaysTheWindow(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name     string
		past     []time.Duration // admissions, as offsets before now
		toStart  int64
		inFlight int
		rules    []throttle.RuleStats
		jobs     int
		mean     time.Duration
		want     time.Duration
	}{
		{name: "nothing left", want: 0},
		{name: "last jobs running", inFlight: 2, mean: time.Second, want: time.Second},
		{name: "no rules: rounds of jobs", toStart: 10, jobs: 4, mean: time.Second, want: 3 * time.Second},
		{
			// 12/3s, 12 calls in the last 3s (one every 250ms): the calls
			// to come go as the old ones expire. The 6th waits for the 6th
			// oldest (1.5s ago) to be 3s old: 1.5s; the 18th is the 6th
			// of the next round, 3s later.
			name: "steady", toStart: 18, jobs: 100, mean: 0,
			past:  spread(12, 250*time.Millisecond),
			rules: []throttle.RuleStats{ruleStats(12, 3*time.Second, 12)},
			want:  4500 * time.Millisecond,
		},
		{
			// 10000/day spent in the last hour: the next call waits 23h.
			name: "daily budget spent", toStart: 1, jobs: 4, mean: time.Second,
			past:  burst(10000, time.Hour),
			rules: []throttle.RuleStats{ruleStats(10000, 24*time.Hour, 10000)},
			want:  23*time.Hour + time.Second,
		},
		{
			// Free room: no wait at all for the rule.
			name: "room left", toStart: 5, jobs: 10, mean: time.Second,
			past:  spread(2, time.Millisecond),
			rules: []throttle.RuleStats{ruleStats(10, time.Second, 2)},
			want:  time.Second,
		},
		{
			// The slowest rule decides.
			name: "two rules", toStart: 20, jobs: 100,
			rules: []throttle.RuleStats{ruleStats(10, time.Second, 0), ruleStats(5, time.Second, 0)},
			want:  3 * time.Second, // 5/s: calls 16..20 in the 4th window
		},
	}
	for _, tt := range tests {
		var rules []throttle.Rule
		for _, r := range tt.rules {
			rules = append(rules, r.Rule)
		}
		e := newETAEstimator(rules)
		for i := len(tt.past) - 1; i >= 0; i-- {
			e.admitted(now.Add(-tt.past[i]))
		}
		got := e.estimate(now, tt.toStart, tt.inFlight, tt.rules, 0, tt.jobs, tt.mean)
		if got != tt.want {
			t.Errorf("%s: estimate = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// spread returns n offsets, the newest first: 0, d, 2d...
func spread(n int, d time.Duration) []time.Duration {
	var s []time.Duration
	for i := 0; i < n; i++ {
		s = append(s, time.Duration(i)*d)
	}
	return s
}

// burst returns n offsets all at ago.
func burst(n int, ago time.Duration) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = ago
	}
	return s
}

func TestETAHugeRuleFallsBack(t *testing.T) {
	// N beyond what is remembered: the calls in the window are assumed to
	// leave it evenly.
	rules := []throttle.RuleStats{ruleStats(1_000_000, time.Hour, 1_000_000)}
	e := newETAEstimator([]throttle.Rule{rules[0].Rule})
	got := e.estimate(t0, 500_000, 0, rules, 0, 0, 0)
	if got != 30*time.Minute {
		t.Errorf("estimate = %v, want 30m", got)
	}
}

func TestETAMargin(t *testing.T) {
	rules := []throttle.RuleStats{ruleStats(1, time.Second, 0)}
	e := newETAEstimator([]throttle.Rule{rules[0].Rule})
	if got := e.estimate(t0, 3, 0, rules, 500*time.Millisecond, 0, 0); got != 3*time.Second {
		t.Errorf("estimate = %v, want 3s (two more windows of 1.5s)", got)
	}
}

func TestBarText(t *testing.T) {
	st := throttle.Stats{Binding: 1, Rules: []throttle.RuleStats{
		{Rule: throttle.Rule{N: 10, Window: time.Second}, Usage: 0.5},
		{Rule: throttle.Rule{N: 500, Window: time.Minute}, Usage: 0.96},
	}}
	if got, want := barText(st, 80*time.Second, true, ""), "500/m 96%, ETA 1m20s"; got != want {
		t.Errorf("barText = %q, want %q", got, want)
	}
	st.Binding = -1
	if got, want := barText(st, 0, false, "stopping"), "stopping"; got != want {
		t.Errorf("barText = %q, want %q", got, want)
	}
}
