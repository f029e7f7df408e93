package cmd

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/throttletest"
)

func TestJobLogExit(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name         string
		r            runner.Result
		exit, signal int
	}{
		{"ok", runner.Result{ExitCode: 0}, 0, 0},
		{"exit status", runner.Result{ExitCode: 3}, 3, 0},
		{"killed by pace's second Ctrl-C", runner.Result{ExitCode: -1, Signal: 9}, -1, 9},
		{"timed out, SIGTERM", runner.Result{ExitCode: -1, Signal: 15, TimedOut: true}, -1, 15},
		{"timed out, exited on its own terms", runner.Result{ExitCode: 143, TimedOut: true}, -1, 0},
		{"could not start", runner.Result{ExitCode: -1, Err: errBoom}, 127, 0},
		{"output lost", runner.Result{ExitCode: 0, Err: errBoom}, 1, 0},
		{"fetch 200", runner.Result{ExitCode: 0, HTTP: &runner.HTTPResult{StatusCode: 200}}, 0, 0},
		{"fetch 404", runner.Result{ExitCode: 1, Err: errBoom, HTTP: &runner.HTTPResult{StatusCode: 404}}, 404, 0},
		{"fetch 304", runner.Result{ExitCode: 1, Err: errBoom, HTTP: &runner.HTTPResult{StatusCode: 304}}, 304, 0},
		{"fetch, no response", runner.Result{ExitCode: -1, Err: errBoom, HTTP: &runner.HTTPResult{}}, -1, 0},
		{"fetch timed out", runner.Result{ExitCode: -1, TimedOut: true, HTTP: &runner.HTTPResult{}}, -1, 0},
		{"fetch 200, body cut off", runner.Result{ExitCode: -1, Err: errBoom, HTTP: &runner.HTTPResult{StatusCode: 200}}, -1, 0},
	}
	for _, tt := range tests {
		exit, signal := jobLogExit(&tt.r)
		if exit != tt.exit || signal != tt.signal {
			t.Errorf("%s: jobLogExit = %d, %d; want %d, %d", tt.name, exit, signal, tt.exit, tt.signal)
		}
	}
}

func TestJobLogOptionsCheck(t *testing.T) {
	tests := []struct {
		o    JobLogOptions
		want string
	}{
		{JobLogOptions{}, ""},
		{JobLogOptions{JobLog: "x", Resume: true}, ""},
		{JobLogOptions{Resume: true}, "--resume needs --joblog FILE"},
		{JobLogOptions{ResumeFailed: true}, "--resume-failed needs --joblog FILE"},
		{JobLogOptions{JobLog: "x", Resume: true, ResumeFailed: true}, "cannot be used together"},
	}
	for _, tt := range tests {
		err := tt.o.check()
		var fe *FlagError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v.check() = %v, want nil", tt.o, err)
		case tt.want != "" && (!errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v.check() = %v, want a FlagError saying %q", tt.o, err, tt.want)
		}
	}
}

// writeLog writes a job log with the given rows and returns its path.
func writeLog(t *testing.T, rows ...runner.JobLogEntry) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.log")
	b := []byte(runner.JobLogHeader + "\n")
	for _, e := range rows {
		b = runner.AppendJobLogEntry(b, e)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestJobLogSeedsTheLimiter(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	// Two calls 0.4s ago, one 0.2s ago, one an hour ago.
	path := writeLog(t,
		runner.JobLogEntry{Seq: 1, Start: now.Add(-time.Hour), Command: "a"},
		runner.JobLogEntry{Seq: 2, Start: now.Add(-400 * time.Millisecond), Command: "b"},
		runner.JobLogEntry{Seq: 3, Start: now.Add(-400 * time.Millisecond), Command: "c"},
		runner.JobLogEntry{Seq: 4, Start: now.Add(-200 * time.Millisecond), Command: "d"},
	)
	jl, err := openJobLog(&JobLogOptions{JobLog: path}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer jl.close()
	clock := throttletest.NewFakeClock(now)
	rules := []throttle.Rule{{N: 3, Window: time.Second}, {N: 4, Window: 2 * time.Hour}}
	lim, err := throttle.New(rules, throttle.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	recent, err := jl.seed(lim, rules, now)
	if err != nil || recent != 4 {
		t.Fatalf("seed = %d, %v; want 4 earlier calls within 2h", recent, err)
	}
	// 3/s is full until the calls of 0.4s ago leave its window, and
	// 4/2h is full until the call of an hour ago leaves its window.
	if d := lim.DelayAt(now); d != time.Hour {
		t.Errorf("DelayAt(now) after seeding = %v, want 1h", d)
	}

	// A limiter that cannot be seeded (Redis keeps its own quota) is left
	// alone.
	if recent, err := jl.seed(struct{}{}, rules, now); recent != 0 || err != nil {
		t.Errorf("seed(not a seeder) = %d, %v; want 0, nil", recent, err)
	}
	var nilLog *jobLog
	if recent, err := nilLog.seed(lim, rules, now); recent != 0 || err != nil {
		t.Errorf("nil jobLog seed = %d, %v; want 0, nil", recent, err)
	}
}

func TestJobLogRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.log")
	jl, err := openJobLog(&JobLogOptions{JobLog: path}, nil, fetchJobLogCommand)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1700000000, 123456789)
	jl.record(&runner.Result{
		Job:   runner.Job{Seq: 7, Argv: []string{"GET", "http://REDACTED@127.0.0.1/x"}},
		Start: start, Runtime: 1500 * time.Millisecond, ExitCode: 1,
		HTTP: &runner.HTTPResult{StatusCode: 503, Bytes: 0},
	}, os.Stderr)
	jl.record(&runner.Result{Job: runner.Job{Seq: 8}, ExitCode: -1}, os.Stderr) // never admitted: no row
	if err := jl.close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := runner.JobLogHeader + "\n7\t:\t1700000000.123457\t     1.500\t0\t0\t503\t0\tGET http://REDACTED@127.0.0.1/x\n"
	if string(got) != want {
		t.Errorf("job log =\n%q, want\n%q", got, want)
	}
}

func TestJobLogWriteFailureIsReportedOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	jl, err := openJobLog(&JobLogOptions{JobLog: path}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	jl.close() // writes now fail
	var w bytes.Buffer
	for seq := int64(1); seq <= 3; seq++ {
		jl.record(&runner.Result{Job: runner.Job{Seq: seq, Argv: []string{"true"}}, Start: time.Unix(1, 0)}, &w)
	}
	if n := strings.Count(w.String(), "pace: warning:"); n != 1 {
		t.Errorf("warnings:\n%s\nwant exactly one", w.String())
	}
}

func TestOpenJobLogErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.log")
	os.WriteFile(bad, []byte("1\t:\tnever\t1\t0\t0\t0\t0\tx\n"), 0o644)
	_, err := openJobLog(&JobLogOptions{JobLog: bad}, nil, nil)
	if !errors.Is(err, runner.ErrSyntax) || !strings.Contains(err.Error(), `"1\t:\tnever`) {
		t.Errorf("openJobLog(malformed) = %v, want a syntax error quoting the line", err)
	}
	_, err = openJobLog(&JobLogOptions{JobLog: t.TempDir()}, nil, nil)
	if err == nil {
		t.Errorf("openJobLog(a directory) = nil error")
	}
	if jl, err := openJobLog(&JobLogOptions{}, nil, nil); jl != nil || err != nil {
		t.Errorf("openJobLog without --joblog = %v, %v; want nil, nil", jl, err)
	}
}
