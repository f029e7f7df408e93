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
	"github.com/pace-cli/pace/internal/summary"
	"github.com/pace-cli/pace/throttle"
)

// intPtr returns a pointer to n.
func intPtr(n int) *int { return &n }

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
	ran := summary.Snapshot{OK: 3, Failed: 1, Attempts: 4}
	for _, tt := range []struct {
		name        string
		f           runFacts
		code        int
		interrupted string
		stopped     string
	}{
		{name: "all ok", f: runFacts{tally: summary.Snapshot{OK: 4, Attempts: 4}}, code: ExitOK},
		{name: "failed jobs", f: runFacts{tally: ran}, code: ExitFailed},
		{name: "output failure", f: runFacts{tally: ran, outputErr: errRead},
			code: ExitFailed, stopped: "job output could not be written"},
		{name: "job log failure over output failure", f: runFacts{tally: ran, outputErr: errRead, jobLogErr: errRead},
			code: ExitFailed, stopped: "the job log could not be written"},
		{name: "read error after jobs ran", f: runFacts{tally: ran, readErr: errRead, jobLogErr: errRead},
			code: ExitFailed, stopped: "the input could not be read"},
		{name: "read error, nothing ran", f: runFacts{readErr: errRead},
			code: ExitUsage, stopped: "the input could not be read"},
		{name: "an item failed to read, nothing else ran", f: runFacts{tally: summary.Snapshot{Failed: 1}, readErr: errRead},
			code: ExitFailed, stopped: "the input could not be read"},
		{name: "resumed input changed", f: runFacts{tally: ran, readErr: fmt.Errorf("x: %w", errChanged)},
			code: ExitUsage, stopped: "the input could not be read"},
		{name: "resumed log too far ahead", f: runFacts{readErr: fmt.Errorf("x: %w", &resume.AheadError{Seq: 9, MaxSeq: 1 << 40, Held: 1 << 20})},
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
		{name: "proxy's command", f: runFacts{tally: ran, command: intPtr(0)}, code: ExitOK},
		{name: "proxy's command failed", f: runFacts{tally: ran, command: intPtr(3)}, code: 3},
		{name: "proxy's command killed", f: runFacts{tally: ran, command: intPtr(ExitTerminated), signal: "SIGTERM"},
			code: ExitTerminated, interrupted: "SIGTERM"},
		// The command did well, but requests it made have no row: never 0.
		{name: "proxy's command ok, job log failure", f: runFacts{tally: ran, command: intPtr(0), jobLogErr: errRead},
			code: ExitFailed, stopped: "the job log could not be written"},
		{name: "proxy's command failed, job log failure", f: runFacts{tally: ran, command: intPtr(3), jobLogErr: errRead},
			code: 3, stopped: "the job log could not be written"},
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
		f := runFacts{opts: &CommonOptions{}, tally: summary.Snapshot{OK: tt.ok, Failed: tt.failed}, total: tt.total, read: tt.read, readAll: tt.readAll}
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
		tally: summary.Snapshot{OK: 9, Failed: 1, Retried: 2, Attempts: 12, NotStarted: 1, PeakRunning: 3,
			P50: time.Second, P95: 2 * time.Second, Max: 3 * time.Second,
			FailedItems: []summary.FailedItem{{Seq: 4, Item: "d", Status: "exit status 1"}},
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
	want := &summary.Summary{OK: 9, Failed: 1, Retried: 2, Attempts: 12, Skipped: 7, Unstarted: 1, Elapsed: 2 * time.Second, Rate: 6,
		Rules:   []summary.RuleSummary{{Rule: r, PeakUsage: 0.5, Waits: 3, WaitTime: time.Second}},
		Binding: summary.Binding{Kind: summary.BindRule, Rule: r}, Jobs: 4, PeakInFlight: 3,
		GlobalJobs: 8, SlotWaits: 2, SlotWaitTime: 500 * time.Millisecond, Margin: 50 * time.Millisecond, MarginFixed: true,
		P50: time.Second, P95: 2 * time.Second, Max: 3 * time.Second, FailedItems: f.tally.FailedItems,
		Interrupted: "SIGINT", ExitCode: ExitInterrupted,
		HTTP:  &summary.HTTP{Status: map[string]int64{"200": 9, "500": 3}, Bytes: 1000, Pauses: 1, PauseWaitTime: 100 * time.Millisecond, PauseReason: "429"},
		Store: &throttle.StoreStats{Name: "redis", RoundTrips: 20},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("summarize =\n%+v\nwant\n%+v", s, want)
	}
}

func TestWriteSummary(t *testing.T) {
	s := &summary.Summary{OK: 1, Attempts: 1, Jobs: 1}
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
	s := &summary.Summary{OK: 98, Failed: 2, Attempts: 100, Jobs: 4}
	if err := writeSummaryFile(t.Context(), path, s); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want, _ := json.MarshalIndent(s, "", "  ")
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
