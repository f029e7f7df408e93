package cmd

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

func TestDurationsExact(t *testing.T) {
	var d durations
	if d.quantile(0.5) != 0 {
		t.Error("quantile of nothing should be 0")
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
		t.Errorf("max = %v", d.max)
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
		want := float64(q*n) * float64(time.Microsecond)
		got := float64(d.quantile(q))
		if math.Abs(got-want)/want > 0.01 {
			t.Errorf("quantile(%v) = %v, want within 1%% of %v", q, time.Duration(got), time.Duration(want))
		}
	}
	if d.max != n*time.Microsecond {
		t.Errorf("max = %v, want exact", d.max)
	}
}

func TestBinding(t *testing.T) {
	r := func(spec string, peak float64, waited time.Duration) RuleSummary {
		rule, _ := throttle.ParseRule(spec)
		return RuleSummary{Rule: rule, PeakUsage: peak, Waited: waited}
	}
	for _, tt := range []struct {
		name  string
		rules []RuleSummary
		peak  int
		want  string
	}{
		{"waited longest", []RuleSummary{r("10/s", 1, time.Second), r("500/m", 1, 3*time.Second)}, 4, "500/m"},
		{"full but no wait", []RuleSummary{r("10/s", 0.5, 0), r("20/m", 1, 0)}, 4, "20/m"},
		{"in-flight cap", []RuleSummary{r("10/s", 0.5, 0)}, 4, "-j 4"},
		{"nothing", []RuleSummary{r("10/s", 0.5, 0)}, 2, ""},
	} {
		if got := binding(tt.rules, tt.peak, 4); got != tt.want {
			t.Errorf("%s: binding = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func testSummary() *Summary {
	s := &Summary{OK: 98, Failed: 2, Retried: 3, Attempts: 103, Elapsed: 12400 * time.Millisecond, Rate: 8.306,
		PeakInFlight: 4, Jobs: 4, P50: 120 * time.Millisecond, P95: 340 * time.Millisecond, Max: 1200 * time.Millisecond}
	s.Rules = []RuleSummary{
		{Rule: throttle.Rule{N: 10, Window: time.Second}, PeakUsage: 1, Waits: 40, Waited: 3200 * time.Millisecond},
		{Rule: throttle.Rule{N: 500, Window: time.Minute}, PeakUsage: 0.206, Waits: 0},
	}
	s.Binding = binding(s.Rules, s.PeakInFlight, s.Jobs)
	return s
}

func TestSummaryText(t *testing.T) {
	var b bytes.Buffer
	testSummary().writeText(&b)
	want := `pace: 98 ok, 2 failed, 3 retried in 12.4s (103 starts, 8.31/s)
  rule 10/s   peak 100%  waited 3.2s (40 waits)  binding
  rule 500/m  peak 21%   waited 0s (0 waits)
  in flight   peak 4 of 4
  job time    p50 120ms  p95 340ms  max 1.2s
`
	if b.String() != want {
		t.Errorf("text summary:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestSummaryJSON(t *testing.T) {
	var b bytes.Buffer
	s := testSummary()
	s.Interrupted, s.ExitCode = "SIGINT", 130
	s.writeJSON(&b)
	if strings.Count(b.String(), "\n") != 1 {
		t.Errorf("JSON summary is not one line: %q", b.String())
	}
	var got map[string]any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"ok": 98.0, "failed": 2.0, "retried": 3.0, "attempts": 103.0, "elapsed_seconds": 12.4, "rate_per_second": 8.306,
		"binding": "10/s", "peak_in_flight": 4.0, "jobs": 4.0, "interrupted": "SIGINT", "exit_code": 130.0,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	d := got["job_duration_seconds"].(map[string]any)
	if d["p50"] != 0.12 || d["p95"] != 0.34 || d["max"] != 1.2 {
		t.Errorf("job_duration_seconds = %v", d)
	}
	rules := got["rules"].([]any)
	r0 := rules[0].(map[string]any)
	if r0["rule"] != "10/s" || r0["peak_usage"] != 1.0 || r0["waits"] != 40.0 || r0["waited_seconds"] != 3.2 {
		t.Errorf("rules[0] = %v", r0)
	}
}

func TestSummaryRedis(t *testing.T) {
	rule := throttle.Rule{N: 10, Window: time.Second}
	st := throttle.Stats{SlotWaits: 4, SlotWaitTime: 3 * time.Second,
		Rules: []throttle.RuleStats{{Rule: rule, PeakUsage: 0.5, Waits: 1, WaitTime: time.Second}}}
	rs := throttle.RedisStats{RoundTrips: 30, Failures: 1}

	// Waiting longer for fleet-wide slots than on any rule: the cap binds.
	s := &Summary{OK: 10, Attempts: 10, Jobs: 4, PeakInFlight: 2}
	s.setRules(st)
	s.setRedis(2, st, rs)
	if s.Binding != "--global-jobs 2" {
		t.Errorf("Binding = %q, want --global-jobs 2", s.Binding)
	}
	var b strings.Builder
	s.writeText(&b)
	for _, want := range []string{"fleet slots  2", "waited 3s (4 waits)  binding", "redis", "30 round trips (3.00 per start)", "1 failed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text summary lacks %q:\n%s", want, b.String())
		}
	}
	var j bytes.Buffer
	s.writeJSON(&j)
	if !strings.Contains(j.String(), `"redis":{"global_jobs":2,"slot_waits":4,"slot_waited_seconds":3,"round_trips":30,"failures":1,"leases_lost":0}`) {
		t.Errorf("JSON summary %s lacks the redis object", j.String())
	}

	// A rule waited on longer keeps the binding; without --global-jobs no slot line.
	st.Rules[0].WaitTime = 5 * time.Second
	s = &Summary{OK: 10, Attempts: 10, Jobs: 4}
	s.setRules(st)
	s.setRedis(0, st, rs)
	if s.Binding != "10/s" {
		t.Errorf("Binding = %q, want 10/s", s.Binding)
	}
	b.Reset()
	s.writeText(&b)
	if strings.Contains(b.String(), "fleet slots") {
		t.Errorf("text summary shows fleet slots without --global-jobs:\n%s", b.String())
	}
}
