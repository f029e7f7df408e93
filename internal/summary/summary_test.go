package summary

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// rule parses one rule for a test.
func rule(t *testing.T, spec string) throttle.Rule {
	t.Helper()
	r, err := throttle.ParseRule(spec)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBindingOf(t *testing.T) {
	rs := func(spec string, peak float64, wait time.Duration) throttle.RuleStats {
		return throttle.RuleStats{Rule: rule(t, spec), PeakUsage: peak, WaitTime: wait}
	}
	for _, tt := range []struct {
		name    string
		st      throttle.Stats
		learned time.Duration
		peak    int
		want    string
	}{
		{name: "the rule waited on longest", st: throttle.Stats{Rules: []throttle.RuleStats{rs("10/s", 1, time.Second), rs("500/m", 1, 3*time.Second)}},
			peak: 4, want: "500/m"},
		{name: "a full rule, no wait", st: throttle.Stats{Rules: []throttle.RuleStats{rs("10/s", 0.5, 0), rs("20/m", 1, 0)}},
			peak: 4, want: "20/m"},
		{name: "the fuller of two full rules", st: throttle.Stats{Rules: []throttle.RuleStats{rs("10/s", 1, 0), rs("20/m", 1.2, 0)}},
			peak: 1, want: "20/m"},
		{name: "-j reached", st: throttle.Stats{Rules: []throttle.RuleStats{rs("10/s", 0.5, 0)}}, peak: 4, want: "-j 4"},
		{name: "nothing held it back", st: throttle.Stats{Rules: []throttle.RuleStats{rs("10/s", 0.5, 0)}}, peak: 2, want: ""},
		{name: "fleet slots waited on longer than rules",
			st:   throttle.Stats{Rules: []throttle.RuleStats{rs("10/s", 1, time.Second)}, MaxInFlight: 8, SlotWaitTime: 3 * time.Second},
			peak: 4, want: "--global-jobs 8"},
		{name: "slot waits without a fleet cap do not count",
			st:   throttle.Stats{Rules: []throttle.RuleStats{rs("10/s", 1, time.Second)}, SlotWaitTime: 3 * time.Second},
			peak: 4, want: "10/s"},
		{name: "server pauses waited on longest",
			st:   throttle.Stats{Rules: []throttle.RuleStats{rs("10/s", 1, time.Second)}, MaxInFlight: 8, SlotWaitTime: 2 * time.Second, PauseWaitTime: 3 * time.Second},
			peak: 4, want: "server"},
		{name: "learned rules count as the server's",
			st:      throttle.Stats{Rules: []throttle.RuleStats{rs("10/s", 1, 2*time.Second)}, PauseWaitTime: time.Second},
			learned: 1500 * time.Millisecond, peak: 4, want: "server"},
		{name: "a tie goes to the rule",
			st:   throttle.Stats{Rules: []throttle.RuleStats{rs("10/s", 1, time.Second)}, PauseWaitTime: time.Second},
			peak: 4, want: "10/s"},
	} {
		if got := Of(tt.st, tt.learned, tt.peak, 4).Text(4, tt.st.MaxInFlight); got != tt.want {
			t.Errorf("%s: Of = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// testSummary is the summary of a run that kept two rules, one binding.
func testSummary(t *testing.T) *Summary {
	s := &Summary{OK: 98, Failed: 2, Retried: 3, Attempts: 103, Elapsed: 12400 * time.Millisecond, Rate: 8.306,
		PeakInFlight: 4, Jobs: 4, Margin: 50 * time.Millisecond,
		P50: 120 * time.Millisecond, P95: 340 * time.Millisecond, Max: 1200 * time.Millisecond, ExitCode: 1,
		FailedItems: []FailedItem{{Seq: 7, Item: "g", Status: "exit status 1"}, {Seq: 9, Item: "i", Status: "exit status 2"}}}
	s.Rules = []RuleSummary{
		{Rule: rule(t, "10/s"), PeakUsage: 1, Waits: 40, WaitTime: 3200 * time.Millisecond},
		{Rule: rule(t, "500/m"), PeakUsage: 0.206},
	}
	s.Binding = Binding{Kind: BindRule, Rule: s.Rules[0].Rule}
	return s
}

func TestSummaryText(t *testing.T) {
	var b bytes.Buffer
	if err := testSummary(t).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `pace: 98 ok, 2 failed, 3 retried in 12.4s (103 starts, 8.31/s)
  rule 10/s   peak 100%  waited 3.2s (40 waits)  binding
  rule 500/m  peak 21%   waited 0s (0 waits)
  in flight   peak 4 of 4
  margin      50ms (adaptive)
  job time    p50 120ms  p95 340ms  max 1.2s
`
	if b.String() != want {
		t.Errorf("text summary:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestSummaryTextEverything(t *testing.T) {
	s := testSummary(t)
	s.Skipped, s.NotStarted, s.Interrupted, s.MarginFixed = 5, 10, "SIGINT", true
	s.GlobalJobs, s.SlotWaits, s.SlotWaitTime = 3, 4, 3*time.Second
	s.Binding = Binding{Kind: BindServer}
	s.HTTP = &HTTP{Status: map[string]int64{"200": 98, "429": 3, "500": 2}, NoResponse: 3,
		Conns: map[string]int64{"refused": 2, "reset": 1}, Bytes: 3 << 20,
		Pauses: 3, PauseWaitTime: 4500 * time.Millisecond, PauseReason: "server: 429 Retry-After: 1"}
	r := rule(t, "5/s")
	s.Learned = &Learned{Refusals: 3, First: &r, Adopted: []throttle.Rule{rule(t, "100/m")}}
	s.Store = &throttle.StoreStats{Name: "redis", RoundTrips: 206, Failures: 1, LeasesLost: 2}
	s.JobLog = "runs/day 1.log"
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := `pace: 98 ok, 2 failed, 3 retried in 12.4s (103 starts, 8.31/s), 5 skipped (done in the job log), 10+ not started, interrupted by SIGINT
  rule 10/s    peak 100%  waited 3.2s (40 waits)
  rule 500/m   peak 21%   waited 0s (0 waits)
  in flight    peak 4 of 4
  fleet slots  3  waited 3s (4 waits)
  margin       50ms (fixed)
  job time     p50 120ms  p95 340ms  max 1.2s
  redis        206 round trips (2.00 per start), 1 failed, 2 fleet-wide slots lost (a job ran on after its lease ran out, and another process could take its slot: the fleet may have gone over --global-jobs 3)
  responses    200 ×98, 429 ×3, 500 ×2, no response ×3 (refused ×2, reset ×1); 3.0 MiB kept
  server       paused admissions 3× for 4.5s (last: 429 Retry-After: 1)  binding
  learned      server allowed about 5/s; pace slowed to it after 3 refusals, then went back to its own rules; kept the server's 100/m (--rules-from-server)
  picture      pace plot -o 'runs/day 1.svg' 'runs/day 1.log'
`
	if b.String() != want {
		t.Errorf("text summary:\n%s\nwant:\n%s", b.String(), want)
	}

}

func TestSummaryTextStopped(t *testing.T) {
	s := &Summary{OK: 1, Attempts: 1, Jobs: 1, NotStarted: 3, NotStartedKnown: true, Stopped: "the limiter failed"}
	var b bytes.Buffer
	s.WriteText(&b)
	if got, want := strings.SplitN(b.String(), "\n", 2)[0], "pace: 1 ok, 0 failed, 0 retried in 0s (1 start, 1.00/s), 3 not started, stopped: the limiter failed"; got != want {
		t.Errorf("first line = %q, want %q", got, want)
	}
}

// jsonShape returns the shape of a decoded JSON value: each object with
// its keys, each array as its first element, and each leaf as the name of
// its JSON type.
func jsonShape(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range v {
			m[k] = jsonShape(e)
		}
		return m
	case []any:
		if len(v) == 0 {
			return []any{}
		}
		return []any{jsonShape(v[0])}
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// summaryShape returns the shape of the JSON summary s writes.
func summaryShape(t *testing.T, s *Summary) any {
	t.Helper()
	var b bytes.Buffer
	if err := s.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n != 1 || !strings.HasSuffix(b.String(), "}\n") {
		t.Errorf("JSON summary is not one line: %q", b.String())
	}
	var v any
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	return jsonShape(v)
}

// TestSummaryJSONSchema pins the JSON summary's schema (docs/summary.md):
// every field and its type, with and without the optional parts. A field
// that goes away or changes type needs a new schema_version.
func TestSummaryJSONSchema(t *testing.T) {
	rule := map[string]any{"rule": "string", "n": "number", "window_seconds": "number", "cost": "bool",
		"peak_usage": "number", "waits": "number", "wait_seconds": "number"}
	base := func() map[string]any {
		return map[string]any{
			"schema_version": "number", "ok": "number", "failed": "number", "retried": "number", "attempts": "number",
			"skipped": "number", "not_started": "number", "not_started_exact": "bool", "unstarted_attempts": "number",
			"elapsed_seconds": "number", "rate_per_second": "number", "rules": []any{},
			"binding": map[string]any{"kind": "string", "rule": "null", "text": "string"},
			"jobs":    "number", "peak_in_flight": "number", "global_jobs": "null",
			"margin":               map[string]any{"seconds": "number", "adaptive": "bool"},
			"job_duration_seconds": map[string]any{"p50": "number", "p95": "number", "max": "number"},
			"failed_items":         []any{}, "failed_items_more": "number",
			"interrupted": "null", "stopped": "null", "exit_code": "number",
		}
	}
	if got, want := summaryShape(t, &Summary{}), any(base()); !reflect.DeepEqual(got, want) {
		t.Errorf("JSON summary of an empty run has shape\n%v\nwant\n%v", got, want)
	}

	s := testSummary(t)
	s.Interrupted, s.Stopped = "SIGINT", "the limiter failed"
	s.GlobalJobs, s.Store = 3, &throttle.StoreStats{Name: "redis"}
	s.HTTP = &HTTP{Status: map[string]int64{"200": 1}, Conns: map[string]int64{"reset": 1}}
	inferred := throttle.Rule{N: 5, Window: time.Second}
	s.Learned = &Learned{Refusals: 1, First: &inferred, Now: &inferred, Adopted: []throttle.Rule{inferred}}
	want := base()
	want["rules"] = []any{rule}
	want["binding"] = map[string]any{"kind": "string", "rule": "string", "text": "string"}
	want["global_jobs"] = map[string]any{"cap": "number", "slot_waits": "number", "slot_wait_seconds": "number"}
	want["failed_items"] = []any{map[string]any{"seq": "number", "item": "string", "status": "string"}}
	want["interrupted"], want["stopped"] = "string", "string"
	want["http"] = map[string]any{"status": map[string]any{"200": "number"}, "no_response": "number",
		"no_response_causes": map[string]any{"reset": "number"}, "bytes": "number",
		"server_pauses": "number", "paused_seconds": "number", "pause_reason": "string"}
	want["store"] = map[string]any{"name": "string", "round_trips": "number", "failures": "number", "leases_lost": "number"}
	want["learned"] = map[string]any{"refusals": "number", "inferred_rule": "string", "rule_at_end": "string",
		"adopted_rules": []any{"string"}, "wait_seconds": "number"}
	if got := summaryShape(t, s); !reflect.DeepEqual(got, any(want)) {
		t.Errorf("JSON summary with every part has shape\n%v\nwant\n%v", got, want)
	}
}

func TestSummaryJSONValues(t *testing.T) {
	s := testSummary(t)
	s.Interrupted, s.ExitCode = "SIGINT", 130
	var b bytes.Buffer
	s.WriteJSON(&b)
	want := `{"schema_version":1,"ok":98,"failed":2,"retried":3,"attempts":103,"skipped":0,"not_started":0,"not_started_exact":false,` +
		`"unstarted_attempts":0,"elapsed_seconds":12.4,"rate_per_second":8.306,"rules":[` +
		`{"rule":"10/s","n":10,"window_seconds":1,"cost":false,"peak_usage":1,"waits":40,"wait_seconds":3.2},` +
		`{"rule":"500/m","n":500,"window_seconds":60,"cost":false,"peak_usage":0.206,"waits":0,"wait_seconds":0}],` +
		`"binding":{"kind":"rule","rule":"10/s","text":"10/s"},"jobs":4,"peak_in_flight":4,"global_jobs":null,` +
		`"margin":{"seconds":0.05,"adaptive":true},"job_duration_seconds":{"p50":0.12,"p95":0.34,"max":1.2},` +
		`"failed_items":[{"seq":7,"item":"g","status":"exit status 1"},{"seq":9,"item":"i","status":"exit status 2"}],` +
		`"failed_items_more":0,"interrupted":"SIGINT","stopped":null,"exit_code":130}` + "\n"
	if b.String() != want {
		t.Errorf("JSON summary:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestSummaryJSONFailedItemsMore(t *testing.T) {
	s := &Summary{Failed: 250, FailedItems: make([]FailedItem, 100)}
	if j := s.jsonForm(); j.FailedMore != 150 {
		t.Errorf("failed_items_more = %d with %d failed and %d named, want 150", j.FailedMore, s.Failed, len(s.FailedItems))
	}
}

// Pauses that no call waited on say so, not "for 0s" (#23).
func TestSummaryPausesNobodyWaitedOn(t *testing.T) {
	for _, tt := range []struct {
		pauses int64
		reason string
		want   string
	}{
		{2, "server: 429 Retry-After: 0", "paused admissions 2× (no call waited on them) (last: 429 Retry-After: 0)"},
		{1, "", "paused admissions 1× (no call waited on it) (last: no reason given)"},
		// Binding with no pause (a rule learned from refusals that asked
		// for none it took): no "0×", no "last" of nothing.
		{0, "", " no pause  binding\n"},
	} {
		s := testSummary(t)
		s.HTTP = &HTTP{Status: map[string]int64{"429": 2}, Pauses: tt.pauses, PauseReason: tt.reason}
		if tt.pauses == 0 {
			s.Binding = Binding{Kind: BindServer}
		}
		var b bytes.Buffer
		if err := s.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tt.want) || strings.Contains(b.String(), "for 0s") || strings.Contains(b.String(), " 0×") {
			t.Errorf("summary:\n%s\nwant a line with %q and no \"for 0s\"", b.String(), tt.want)
		}
	}
}
