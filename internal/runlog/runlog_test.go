package runlog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/internal/resume"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// writeJobLog writes a job log with rows and returns its path.
func writeJobLog(t *testing.T, rules []throttle.Rule, rows ...joblog.Entry) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.log")
	b := []byte(joblog.HeaderFor(rules) + "\n")
	for _, e := range rows {
		b = joblog.AppendEntry(b, e)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readEntries returns the rows of the job log at path.
func readEntries(t *testing.T, path string) []joblog.Entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := joblog.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return log.Entries
}

// argvCommand is a row's Command column: the job's argv joined.
func argvCommand(j *runner.Job) string { return strings.Join(j.Argv, " ") }

// opts are the options of the job log at path of "echo ITEM" jobs.
func opts(path string, mode resume.Mode) Options {
	return Options{Path: path, Resume: mode, Command: argvCommand, Prepare: echoPrepare}
}

// echoPrepare prepares "echo ITEM".
func echoPrepare(job *runner.Job) error { job.Argv = []string{"echo", job.Item}; return nil }

func TestJobLogSeedsTheLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // time.Now() stands still
		now := time.Now()
		// One call an hour ago, two 0.4s ago, one 0.2s ago.
		path := writeJobLog(t, nil,
			joblog.Entry{Seq: 1, Start: now.Add(-time.Hour), Command: "a"},
			joblog.Entry{Seq: 2, Start: now.Add(-400 * time.Millisecond), Command: "b"},
			joblog.Entry{Seq: 3, Start: now.Add(-400 * time.Millisecond), Command: "c"},
			joblog.Entry{Seq: 4, Start: now.Add(-200 * time.Millisecond), Command: "d"},
		)
		rules := []throttle.Rule{{N: 3, Window: time.Second}, {N: 4, Window: 2 * time.Hour}}
		jl, err := Open(opts(path, 0), rules)
		if err != nil {
			t.Fatal(err)
		}
		defer jl.Close()
		lim, err := throttle.New(throttle.Options{Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		recent, err := jl.Seed(lim, rules, now)
		if err != nil || recent != 4 {
			t.Fatalf("seed = %d, %v; want 4 earlier calls within 2h", recent, err)
		}
		// 3/s is full until the calls of 0.4s ago leave its window, and 4/2h
		// until the call of an hour ago leaves its window.
		if d := lim.DelayN(now, 1); d != time.Hour {
			t.Errorf("DelayN(now) after seeding = %v, want 1h", d)
		}
		var nilLog *Log
		if recent, err := nilLog.Seed(lim, rules, now); recent != 0 || err != nil {
			t.Errorf("seed without a job log = %d, %v; want 0, nil", recent, err)
		}
	})
}

func TestJobLogRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.log")
	rules := []throttle.Rule{{N: 5, Window: time.Second}}
	jl, err := Open(Options{Path: path, Command: argvCommand, Prepare: echoPrepare}, rules)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1700000000, 123456789)
	if err := jl.Record(&runner.Result{
		Job:   runner.Job{Seq: 7, Argv: []string{"GET", "http://REDACTED@127.0.0.1/x"}},
		Start: start, Runtime: 1500 * time.Millisecond, ExitCode: 1,
		HTTP: &runner.HTTPInfo{StatusCode: 503, Bytes: 0},
	}); err != nil {
		t.Fatal(err)
	}
	out := runner.NewCapture(0, "")
	out.Write([]byte("hello\n"))
	jl.Record(&runner.Result{Job: runner.Job{Seq: 8, Argv: []string{"GET", "http://h/y"}}, Start: start, Stdout: out,
		HTTP: &runner.HTTPInfo{StatusCode: 200, Bytes: 6}})
	if err := jl.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := joblog.HeaderFor(rules) + "\n" +
		"7\t:\t1700000000.123457\t     1.500\t0\t0\t503\t0\tGET http://REDACTED@127.0.0.1/x\n" +
		"8\t:\t1700000000.123457\t     0.000\t0\t6\t0\t0\tGET http://h/y\n"
	if string(got) != want {
		t.Errorf("job log =\n%q\nwant\n%q", got, want)
	}
}

func TestJobLogRecordsCosts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cost.log")
	rules := []throttle.Rule{{N: 100, Window: time.Second, Cost: true}}
	jl, err := Open(opts(path, 0), rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []runner.Result{
		{Job: runner.Job{Seq: 1, Argv: []string{"a"}}},                   // cost 0 means 1
		{Job: runner.Job{Seq: 2, Argv: []string{"b"}, Cost: 7}},          // the estimate
		{Job: runner.Job{Seq: 3, Argv: []string{"c"}, Cost: 7}, Cost: 3}, // the cost learned from the call
	} {
		r.Start = time.Unix(1, 0)
		jl.Record(&r)
	}
	jl.Close()
	var sends []int64
	for _, e := range readEntries(t, path) {
		sends = append(sends, e.Send)
	}
	if len(sends) != 3 || sends[0] != 1 || sends[1] != 7 || sends[2] != 3 {
		t.Errorf("Send columns %v, want 1 7 3", sends)
	}
}

func TestOpenJobLogErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.log")
	os.WriteFile(bad, []byte("1\t:\tnever\t1\t0\t0\t0\t0\tx\n"), 0o644)
	_, err := Open(opts(bad, 0), nil)
	if !errors.Is(err, joblog.ErrSyntax) || !strings.HasPrefix(err.Error(), "job log "+bad+": ") || !strings.Contains(err.Error(), `"1\t:\tnever`) {
		t.Errorf("Open(malformed) = %v, want a syntax error naming the file and quoting the line", err)
	}
	dir := t.TempDir()
	if _, err := Open(opts(dir, 0), nil); err == nil ||
		err.Error() != "job log "+dir+" is a directory, not a regular file: pace reads and appends to a file of its own" {
		t.Errorf("Open(a directory) = %v", err)
	}
	if jl, err := Open(opts("", 0), nil); jl != nil || err != nil {
		t.Errorf("Open without --joblog = %v, %v; want nil, nil", jl, err)
	}
	// A nil job log does nothing.
	var jl *Log
	if jl.Record(&runner.Result{}) != nil || jl.Close() != nil || jl.Skipped() != 0 || jl.ToRun(5) != 5 {
		t.Errorf("a nil job log did something")
	}
}

// TestJobLogResume: what a resumed run skips, says and counts.
func TestJobLogResume(t *testing.T) {
	at := time.Unix(1700000000, 0)
	path := writeJobLog(t, nil,
		joblog.Entry{Seq: 1, Start: at, Command: "echo a"},
		joblog.Entry{Seq: 2, Start: at, Exit: 1, Command: "echo b"},
		joblog.Entry{Seq: 3, Start: at, Command: "echo c"},
	)
	for _, tt := range []struct {
		o        Options
		announce string
		run      []string
		toRun    int64
	}{
		{opts(path, resume.All),
			"pace: resuming from " + path + ": it records 3 items as run, skipped\n", []string{"d"}, 1},
		{opts(path, resume.Failed),
			"pace: resuming from " + path + ": it records 2 items that succeeded, skipped, and 1 that failed, run again\n", []string{"b", "d"}, 2},
		{opts(path, 0), "", []string{"a", "b", "c", "d"}, 4},
	} {
		jl, err := Open(tt.o, nil)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		jl.Announce(&b, 0, false)
		if b.String() != tt.announce {
			t.Errorf("%+v: announce = %q, want %q", tt.o.Resume, b.String(), tt.announce)
		}
		out := make(chan runner.Item, 10)
		if err := jl.ReadItems(context.Background(), strings.NewReader("a\nb\nc\nd\n"), items.ReadOptions{}, out); err != nil {
			t.Fatal(err)
		}
		close(out)
		var run []string
		for it := range out {
			if !it.Skip {
				run = append(run, it.Text)
			}
		}
		if strings.Join(run, " ") != strings.Join(tt.run, " ") || jl.Skipped() != int64(4-len(tt.run)) || jl.ToRun(4) != tt.toRun {
			t.Errorf("%+v: items run %q (skipped %d, toRun(4) = %d), want %q (toRun %d)", tt.o.Resume, run, jl.Skipped(), jl.ToRun(4), tt.run, tt.toRun)
		}
		jl.Close()
	}
	// An input that is not the one the log was written for is refused.
	jl, _ := Load(opts(path, resume.All))
	err := jl.ReadItems(context.Background(), strings.NewReader("a\nX\nc\n"), items.ReadOptions{}, make(chan runner.Item, 10))
	if !errors.Is(err, resume.ErrInputChanged) {
		t.Errorf("readItems of another input = %v, want ErrInputChanged", err)
	}
}

func TestJobLogAnnounceVerbose(t *testing.T) {
	jl := &Log{path: "x.log", earlier: &joblog.Log{}}
	var b strings.Builder
	jl.Announce(&b, 3, true)
	jl.Announce(&b, 3, false)
	jl.Announce(&b, 0, true)
	if want := "pace: job log x.log: 3 earlier calls still count against the rules\n"; b.String() != want {
		t.Errorf("announce = %q, want %q once", b.String(), want)
	}
}
