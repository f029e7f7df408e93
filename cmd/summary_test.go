package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/resume"
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

func TestSummarizeExitCode(t *testing.T) {
	errBackend := fmt.Errorf("redis: %w", throttle.ErrBackend)
	errMismatch := fmt.Errorf("redis quota: %w", &throttle.MismatchError{Key: "k"})
	errRead := errors.New("read items: disk on fire")
	errChanged := &resume.InputChangedError{Seq: 2, Command: "echo b", Logged: "echo a"}
	ran := tallySnapshot{OK: 3, Failed: 1, Attempts: 4}
	for _, tt := range []struct {
		name        string
		f           runFacts
		code        int
		interrupted string
		stopped     string
	}{
		{name: "all ok", f: runFacts{tally: tallySnapshot{OK: 4, Attempts: 4}}, code: ExitOK},
		{name: "failed jobs", f: runFacts{tally: ran}, code: ExitFailed},
		{name: "output failure", f: runFacts{tally: ran, outputErr: errRead},
			code: ExitFailed, stopped: "job output could not be written"},
		{name: "job log failure over output failure", f: runFacts{tally: ran, outputErr: errRead, jobLogErr: errRead},
			code: ExitFailed, stopped: "the job log could not be written"},
		{name: "read error after jobs ran", f: runFacts{tally: ran, readErr: errRead, jobLogErr: errRead},
			code: ExitFailed, stopped: "the input could not be read"},
		{name: "read error, nothing ran", f: runFacts{readErr: errRead},
			code: ExitUsage, stopped: "the input could not be read"},
		{name: "an item failed to read, nothing else ran", f: runFacts{tally: tallySnapshot{Failed: 1}, readErr: errRead},
			code: ExitFailed, stopped: "the input could not be read"},
		{name: "resumed input changed", f: runFacts{tally: ran, readErr: fmt.Errorf("x: %w", errChanged)},
			code: ExitUsage, stopped: "the input could not be read"},
		{name: "broken pipe over read error", f: runFacts{tally: ran, readErr: errRead, pipe: true},
			code: ExitBrokenPipe, interrupted: "SIGPIPE"},
		{name: "SIGINT over broken pipe", f: runFacts{tally: ran, pipe: true, signal: "SIGINT"},
			code: ExitInterrupted, interrupted: "SIGINT"},
		{name: "SIGTERM", f: runFacts{tally: ran, signal: "SIGTERM"},
			code: ExitTerminated, interrupted: "SIGTERM"},
		{name: "limiter failure over everything", f: runFacts{tally: ran, limitErr: errBackend, signal: "SIGINT", pipe: true, readErr: errRead},
			code: ExitBackend, interrupted: "SIGINT", stopped: "the limiter failed"},
		{name: "rules mismatch", f: runFacts{limitErr: errMismatch},
			code: ExitUsage, stopped: "the limiter failed"},
		{name: "limiter failure of another kind", f: runFacts{limitErr: errors.New("admit: cost too large")},
			code: ExitBackend, stopped: "the limiter failed"},
	} {
		f := tt.f
		f.opts, f.total, f.read = &CommonOptions{}, -1, -1
		s, code := summarize(&f)
		if code != tt.code || s.ExitCode != tt.code || s.Interrupted != tt.interrupted || s.Stopped != tt.stopped {
			t.Errorf("%s: summarize = exit %d (summary %d), interrupted %q, stopped %q; want %d, %q, %q",
				tt.name, code, s.ExitCode, s.Interrupted, s.Stopped, tt.code, tt.interrupted, tt.stopped)
		}
	}
}

func TestSummarizeNotStarted(t *testing.T) {
	for _, tt := range []struct {
		name        string
		ok, failed  int64
		total, read int64
		readAll     bool
		want        int64
		known       bool
	}{
		{name: "known total", ok: 3, failed: 1, total: 10, read: 6, want: 6, known: true},
		{name: "input read to its end", ok: 5, total: -1, read: 5, readAll: true, want: 0, known: true},
		{name: "input cut short", ok: 2, failed: 1, total: -1, read: 5, want: 2, known: false},
		{name: "reader still blocked", ok: 2, total: -1, read: -1, want: 0, known: false},
		{name: "more done than counted", ok: 5, total: 3, read: 5, want: 0, known: true},
	} {
		f := runFacts{opts: &CommonOptions{}, tally: tallySnapshot{OK: tt.ok, Failed: tt.failed}, total: tt.total, read: tt.read, readAll: tt.readAll}
		s, _ := summarize(&f)
		if s.NotStarted != tt.want || s.NotStartedKnown != tt.known {
			t.Errorf("%s: NotStarted = %d (known %v), want %d (known %v)", tt.name, s.NotStarted, s.NotStartedKnown, tt.want, tt.known)
		}
	}
}

func TestSummarizeCopiesTheFacts(t *testing.T) {
	r := rule(t, "10/s")
	f := &runFacts{
		opts: &CommonOptions{MarginSet: true}, jobs: 4, elapsed: 2 * time.Second, skipped: 7, total: -1, read: -1,
		tally: tallySnapshot{OK: 9, Failed: 1, Retried: 2, Attempts: 12, NotStarted: 1, PeakRunning: 3,
			P50: time.Second, P95: 2 * time.Second, Max: 3 * time.Second,
			FailedItems: []failedItem{{Seq: 4, Item: "d", Status: "exit status 1"}},
			HTTP:        true, Statuses: map[string]int64{"200": 9, "500": 3}, Bytes: 1000},
		stats: throttle.Stats{
			Rules:       []throttle.RuleStats{{Rule: r, PeakUsage: 0.5, Waits: 3, WaitTime: time.Second}},
			MaxInFlight: 8, SlotWaits: 2, SlotWaitTime: 500 * time.Millisecond, Margin: 50 * time.Millisecond,
			Pauses: 1, PauseWaitTime: 100 * time.Millisecond, PauseReason: "429",
			Store: throttle.StoreStats{Name: "redis", RoundTrips: 20},
		},
		signal: "SIGINT",
	}
	s, _ := summarize(f)
	want := &Summary{OK: 9, Failed: 1, Retried: 2, Attempts: 12, Skipped: 7, Unstarted: 1, Elapsed: 2 * time.Second, Rate: 6,
		Rules:   []RuleSummary{{Rule: r, PeakUsage: 0.5, Waits: 3, WaitTime: time.Second}},
		Binding: binding{kind: bindRule, rule: r}, Jobs: 4, PeakInFlight: 3,
		GlobalJobs: 8, SlotWaits: 2, SlotWaitTime: 500 * time.Millisecond, Margin: 50 * time.Millisecond, MarginFixed: true,
		P50: time.Second, P95: 2 * time.Second, Max: 3 * time.Second, FailedItems: f.tally.FailedItems,
		Interrupted: "SIGINT", ExitCode: ExitInterrupted,
		HTTP:  &HTTPSummary{Status: map[string]int64{"200": 9, "500": 3}, Bytes: 1000, Pauses: 1, PauseWaitTime: 100 * time.Millisecond, PauseReason: "429"},
		Store: &throttle.StoreStats{Name: "redis", RoundTrips: 20},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("summarize =\n%+v\nwant\n%+v", s, want)
	}
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
		if got := bindingOf(tt.st, tt.learned, tt.peak, 4).string(4, tt.st.MaxInFlight); got != tt.want {
			t.Errorf("%s: bindingOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// testSummary is the summary of a run that kept two rules, one binding.
func testSummary(t *testing.T) *Summary {
	s := &Summary{OK: 98, Failed: 2, Retried: 3, Attempts: 103, Elapsed: 12400 * time.Millisecond, Rate: 8.306,
		PeakInFlight: 4, Jobs: 4, Margin: 50 * time.Millisecond,
		P50: 120 * time.Millisecond, P95: 340 * time.Millisecond, Max: 1200 * time.Millisecond, ExitCode: ExitFailed,
		FailedItems: []failedItem{{Seq: 7, Item: "g", Status: "exit status 1"}, {Seq: 9, Item: "i", Status: "exit status 2"}}}
	s.Rules = []RuleSummary{
		{Rule: rule(t, "10/s"), PeakUsage: 1, Waits: 40, WaitTime: 3200 * time.Millisecond},
		{Rule: rule(t, "500/m"), PeakUsage: 0.206},
	}
	s.Binding = binding{kind: bindRule, rule: s.Rules[0].Rule}
	return s
}

func TestSummaryText(t *testing.T) {
	var b bytes.Buffer
	if err := testSummary(t).writeText(&b); err != nil {
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
	s.Binding = binding{kind: bindServer}
	s.HTTP = &HTTPSummary{Status: map[string]int64{"200": 98, "429": 3, "500": 2}, NoResponse: 3,
		Conns: map[string]int64{"refused": 2, "reset": 1}, Bytes: 3 << 20,
		Pauses: 3, PauseWaitTime: 4500 * time.Millisecond, PauseReason: "server: 429 Retry-After: 1"}
	r := rule(t, "5/s")
	s.Learned = &learned{Refusals: 3, First: &r, Adopted: []throttle.Rule{rule(t, "100/m")}}
	s.Store = &throttle.StoreStats{Name: "redis", RoundTrips: 206, Failures: 1}
	s.JobLog = "runs/day 1.log"
	var b bytes.Buffer
	if err := s.writeText(&b); err != nil {
		t.Fatal(err)
	}
	want := `pace: 98 ok, 2 failed, 3 retried in 12.4s (103 starts, 8.31/s), 5 skipped (done in the job log), 10+ not started, interrupted by SIGINT
  rule 10/s    peak 100%  waited 3.2s (40 waits)
  rule 500/m   peak 21%   waited 0s (0 waits)
  in flight    peak 4 of 4
  fleet slots  3  waited 3s (4 waits)
  margin       50ms (fixed)
  job time     p50 120ms  p95 340ms  max 1.2s
  redis        206 round trips (2.00 per start), 1 failed
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
	s.writeText(&b)
	if got, want := lastLine(strings.SplitN(b.String(), "\n", 2)[0]), "pace: 1 ok, 0 failed, 0 retried in 0s (1 start, 1.00/s), 3 not started, stopped: the limiter failed"; got != want {
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
	if err := s.writeJSON(&b); err != nil {
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
	s.HTTP = &HTTPSummary{Status: map[string]int64{"200": 1}, Conns: map[string]int64{"reset": 1}}
	inferred := throttle.Rule{N: 5, Window: time.Second}
	s.Learned = &learned{Refusals: 1, First: &inferred, Now: &inferred, Adopted: []throttle.Rule{inferred}}
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
	s.Interrupted, s.ExitCode = "SIGINT", ExitInterrupted
	var b bytes.Buffer
	s.writeJSON(&b)
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
	s := &Summary{Failed: 250, FailedItems: make([]failedItem, maxFailedItems)}
	if j := s.jsonForm(); j.FailedMore != 150 {
		t.Errorf("failed_items_more = %d with %d failed and %d named, want 150", j.FailedMore, s.Failed, len(s.FailedItems))
	}
}

func TestWriteSummary(t *testing.T) {
	s := &Summary{OK: 1, Attempts: 1, Jobs: 1}
	for _, tt := range []struct{ form, prefix string }{
		{summaryText, "pace: 1 ok"}, {summaryJSON, `{"schema_version":1,"ok":1,`}, {summaryNone, ""},
	} {
		var b bytes.Buffer
		if err := writeSummary(&b, tt.form, s); err != nil || !strings.HasPrefix(b.String(), tt.prefix) || (tt.prefix == "") != (b.Len() == 0) {
			t.Errorf("writeSummary(%s) = %v, wrote %q; want it to start with %q", tt.form, err, b.String(), tt.prefix)
		}
	}
}

func TestWriteSummaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := testSummary(t)
	if err := writeSummaryFile(t.Context(), path, s); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want, _ := json.MarshalIndent(s.jsonForm(), "", "  ")
	if string(got) != string(want)+"\n" {
		t.Errorf("summary file =\n%s\nwant\n%s", got, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("summary file mode = %v (%v), want 0600, the mode of the file it replaced", fi.Mode(), err)
	}
	// A file that cannot be written leaves nothing behind and says why.
	err := writeSummaryFile(t.Context(), filepath.Join(dir, "missing", "summary.json"), s)
	if err == nil || !strings.HasPrefix(err.Error(), "--summary-file ") {
		t.Errorf("writeSummaryFile(missing dir) = %v, want a summary file error", err)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 1 {
		t.Errorf("files left: %q, want only summary.json", names)
	}
}

func TestFormatters(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{formatRate(0), "0.00"}, {formatRate(8.306), "8.31"}, {formatRate(15), "15.0"}, {formatRate(123.4), "123"},
		{roundDuration(1234 * time.Nanosecond).String(), "1µs"},
		{roundDuration(1234567 * time.Nanosecond).String(), "1ms"},
		{roundDuration(12345 * time.Millisecond).String(), "12.3s"},
		{roundDuration(90*time.Second + 400*time.Millisecond).String(), "1m30s"},
		{formatBytes(1023), "1023 B"}, {formatBytes(1536), "1.5 KiB"}, {formatBytes(3 << 30), "3.0 GiB"},
		{plural(1, "item"), "item"}, {plural(2, "item"), "items"}, {plural(0, "item"), "items"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
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
	} {
		s := testSummary(t)
		s.HTTP = &HTTPSummary{Status: map[string]int64{"429": 2}, Pauses: tt.pauses, PauseReason: tt.reason}
		var b bytes.Buffer
		if err := s.writeText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tt.want) || strings.Contains(b.String(), "for 0s") {
			t.Errorf("summary:\n%s\nwant a line with %q and no \"for 0s\"", b.String(), tt.want)
		}
	}
}
