package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/internal/runlog"
	"github.com/pace-cli/pace/internal/termbar"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// failingWriter is a stdout whose every write fails with err.
type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

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

// readRows returns the last row of each Seq in the job log at path.
func readRows(t *testing.T, path string) map[int]joblog.Entry {
	t.Helper()
	rows := map[int]joblog.Entry{}
	for _, e := range readEntries(t, path) {
		rows[e.Seq] = e
	}
	return rows
}

// TestSessionOutputFails: a job whose output cannot be written has
// failed; the first such failure stops admissions and is reported once.
func TestSessionOutputFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testOptions(t, 2)
		o.JobLog = filepath.Join(t.TempDir(), "jobs.log")
		ex := &fakeExec{took: time.Second}
		ts := newTestSession(t, "1\n2\n3\n4\n5\n", o, ex)
		ts.s.f.IOStreams.Out = failingWriter{errors.New("no space left on device")}
		if code := ts.run(); code != ExitFailed {
			t.Errorf("run = exit %d, want %d", code, ExitFailed)
		}
		if got := slices.Sorted(slices.Values(ex.started())); !slices.Equal(got, []string{"1", "2"}) {
			t.Errorf("jobs started: %q, want only the two running when output failed", got)
		}
		stderr := ts.errOut.String()
		const stopped = "pace: writing job output failed (no space left on device): starting no more jobs; the running ones finish\n"
		if n := strings.Count(stderr, stopped); n != 1 {
			t.Errorf("stderr says %d times %q, want once:\n%s", n, stopped, stderr)
		}
		for _, want := range []string{
			"pace: job 1: output could not be written: no space left on device\n",
			"pace: job 2: output could not be written: no space left on device\n",
			"pace: 0 ok, 2 failed, 0 retried in 1s (2 starts, 2.00/s), stopped: job output could not be written\n",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
		// The rows say the jobs failed: a resumed run knows their output
		// is lost.
		rows := readRows(t, o.JobLog)
		if len(rows) != 2 || rows[1].Exit != 1 || rows[2].Exit != 1 {
			t.Errorf("job log rows %+v, want jobs 1 and 2 with Exitval 1", rows)
		}
	})
}

// lostOutput is an executor whose job 1 cannot keep its output (a full
// disk under pace fetch -o DIR/): its result carries runner.ErrOutput.
type lostOutput struct{ *fakeExec }

func (e lostOutput) Execute(ctx context.Context, job *runner.Job) *runner.Result {
	r := e.fakeExec.Execute(ctx, job)
	if job.Item == "1" {
		r.ExitCode = 1
		r.Err = runner.Permanent(fmt.Errorf("job 1: GET http://x/1: %w: write out/.1.tmp: no space left on device", runner.ErrOutput))
	}
	return r
}

// TestSessionOutputFileFails: a job whose output could not be written
// where the executor keeps it (-o DIR/ on a full disk) stops admissions,
// as a failed write to stdout does: no more quota spent in vain.
func TestSessionOutputFileFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testOptions(t, 1)
		ex := &fakeExec{}
		ts := newTestSession(t, "1\n2\n3\n4\n5\n", o, lostOutput{ex})
		if code := ts.run(); code != ExitFailed {
			t.Errorf("run = exit %d, want %d", code, ExitFailed)
		}
		if got := ex.started(); !slices.Equal(got, []string{"1"}) {
			t.Errorf("jobs started: %q, want only job 1, whose output was lost", got)
		}
		stderr := ts.errOut.String()
		for _, want := range []string{
			"pace: job 1: GET http://x/1: output could not be written: write out/.1.tmp: no space left on device\n",
			"pace: job 1's output could not be written: starting no more jobs; the running ones finish\n",
			"stopped: job output could not be written",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
	})
}

// TestSessionStdoutClosed: when the reader of stdout goes away (EPIPE),
// pace starts nothing more, kills the running jobs and exits 141, without
// a failure line per job.
func TestSessionStdoutClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 2/h: the third item waits for quota, so it cannot start
		// between the failed write and the stop.
		o := testOptions(t, 2, "2/h")
		o.JobLog = filepath.Join(t.TempDir(), "jobs.log")
		ex := &fakeExec{took: time.Second, hang: func(item string) bool { return item != "1" }}
		ts := newTestSession(t, "1\n2\n3\n4\n", o, ex)
		ts.s.f.IOStreams.Out = failingWriter{&os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}}
		if code := ts.run(); code != ExitBrokenPipe {
			t.Errorf("run = exit %d, want %d", code, ExitBrokenPipe)
		}
		if got := slices.Sorted(slices.Values(ex.started())); !slices.Equal(got, []string{"1", "2"}) {
			t.Errorf("jobs started: %q, want only the two running when stdout closed", got)
		}
		if causes := ex.killedBy(); len(causes) != 1 || !errors.Is(causes[0], runner.ErrKillNow) {
			t.Errorf("running job cancelled by %v, want ErrKillNow", causes)
		}
		// No failure line for the jobs: their output is lost as a whole.
		lines := strings.Split(ts.errOut.String(), "\n")
		re := regexp.MustCompile(`^pace: 0 ok, 2 failed, 0 retried in 1s \(2 starts, 2\.00/h\)(, 1\+ not started)?, interrupted by SIGPIPE$`)
		if lines[0] != "pace: stdout closed: starting no more jobs, killing 1 running" || !re.MatchString(lines[1]) {
			t.Errorf("stderr =\n%s\nwant the stop, then the summary", ts.errOut)
		}
		rows := readRows(t, o.JobLog)
		if len(rows) != 2 || rows[1].Exit != 1 || rows[2].Exit != -1 || rows[2].Signal != int(syscall.SIGKILL) {
			t.Errorf("job log rows %+v, want job 1 failed (Exitval 1) and job 2 killed", rows)
		}
	})
}

// recorderFor returns a recorder of a session with options o writing to
// stdout and stderr, whose stop counts its calls.
func recorderFor(o *CommonOptions, jl *runlog.Log, stdout, stderr io.Writer, print func(out, errOut io.Writer, r *runner.Result) error) (*recorder, *int) {
	ios, _, _, _ := Test()
	ios.Out, ios.ErrOut = stdout, stderr
	s := &session{f: &Factory{IOStreams: ios}, opts: o, print: print, logCommand: jobLogCommand, show: func(j *runner.Job) string { return j.Item }}
	backend, _ := throttle.New(throttle.Options{})
	stops := new(int)
	disp := &display{w: stderr, mode: progressNever, line: termbar.NewLine(false, nil)}
	return newRecorder(s, backend, jl, disp, stderr, func() { *stops++ }), stops
}

// done returns the JobDone event of job seq, admitted at start, that
// printed its item.
func done(seq int64, start time.Time) runner.Event {
	out := runner.NewCapture(0, "")
	fmt.Fprintf(out, "%d\n", seq)
	item := fmt.Sprint(seq)
	return runner.Event{Kind: runner.JobDone, Result: &runner.Result{
		Job: runner.Job{Seq: seq, Item: item, Attempt: 1, Argv: []string{"echo", item}}, Start: start, Stdout: out}}
}

// TestRecorderRowAfterOutput: a final attempt's row is written once its
// output has been printed, so that a row means the item is done.
func TestRecorderRowAfterOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.log")
	jl, err := runlog.Open(runlog.Options{Path: path, Command: jobLogCommand}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer jl.Close()
	var stdout, stderr strings.Builder
	print := func(out, errOut io.Writer, r *runner.Result) error {
		for _, e := range readEntries(t, path) {
			if e.Seq == int(r.Job.Seq) && e.Start.Equal(r.Start) {
				t.Errorf("printing job %d: the job log has its row already", r.Job.Seq)
			}
		}
		return printOutput(false)(out, errOut, r)
	}
	rec, _ := recorderFor(testOptions(t, 1), jl, &stdout, &stderr, print)
	start := time.Unix(1700000000, 0)
	// An attempt that will be retried has a row, and no output.
	failed := &runner.Result{Job: runner.Job{Seq: 1, Item: "1", Attempt: 1, Argv: []string{"echo", "1"}}, Start: start, ExitCode: 1}
	rec.onEvent(runner.Event{Kind: runner.JobFinished, Result: failed, Retry: true})
	rec.onEvent(done(1, start.Add(time.Second)))
	rec.onEvent(done(2, start.Add(2*time.Second)))
	if rows := readEntries(t, path); len(rows) != 3 || rows[0].Exit != 1 || !rows[1].Start.Equal(start.Add(time.Second)) || rows[2].Seq != 2 {
		t.Errorf("job log rows %+v, want job 1's failed attempt, then the final attempts of jobs 1 and 2", rows)
	}
	if stdout.String() != "1\n2\n" {
		t.Errorf("stdout = %q, want the output of jobs 1 and 2", stdout.String())
	}
	// An item that never started (never admitted) has no row.
	rec.onEvent(runner.Event{Kind: runner.JobDone, Result: &runner.Result{Job: runner.Job{Seq: 3, Item: "3"}, ExitCode: -1, Err: errors.New("job 3: item too long")}})
	if rows := readEntries(t, path); len(rows) != 3 {
		t.Errorf("job log has %d rows after an item that never started, want 3", len(rows))
	}
	if got, want := stderr.String(), "pace: job 3: item too long\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}

// TestRecorderJobLogFails: the first row that cannot be written stops
// admissions and is reported once; every item that ran afterwards is
// named as having no row.
func TestRecorderJobLogFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.log")
	jl, err := runlog.Open(runlog.Options{Path: path, Command: jobLogCommand}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jl.Close() // every write fails from now on
	var stdout, stderr strings.Builder
	rec, stops := recorderFor(testOptions(t, 1), jl, &stdout, &stderr, printOutput(false))
	for seq := int64(25); seq >= 1; seq-- {
		rec.onEvent(done(seq, time.Unix(1700000000, 0)))
	}
	if *stops != 1 {
		t.Errorf("admissions stopped %d times, want once", *stops)
	}
	if n := strings.Count(stderr.String(), ": starting no more jobs; the running ones finish\n"); n != 1 || !strings.HasPrefix(stderr.String(), "pace: write job log "+path+": job log write failed") {
		t.Errorf("stderr = %q, want the failure reported once", stderr.String())
	}
	unlogged, jlErr, outErr, _ := rec.failures()
	if !errors.Is(jlErr, joblog.ErrWriteFailed) || outErr != nil || len(unlogged) != 25 {
		t.Errorf("failures() = %v, %v, %v; want the write failure, no output failure, 25 items", jlErr, outErr, unlogged)
	}
	var report strings.Builder
	rec.reportUnlogged(&report)
	want := "pace: job log " + path + " has no row for 25 items that ran: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 and 5 more; a --resume would run them again\n"
	if report.String() != want {
		t.Errorf("reportUnlogged:\n%s\nwant:\n%s", report.String(), want)
	}
	if stdout.Len() == 0 {
		t.Errorf("no output printed: the jobs' output goes on even when their rows cannot be written")
	}
}

func TestRecorderReportUnloggedOne(t *testing.T) {
	t.Chdir(t.TempDir())
	jl, err := runlog.Load(runlog.Options{Path: "x.log"})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := recorderFor(testOptions(t, 1), jl, io.Discard, io.Discard, printOutput(false))
	rec.unlogged = []int64{7, 7}
	var b strings.Builder
	rec.reportUnlogged(&b)
	if want := "pace: job log x.log has no row for 1 item that ran: 7; a --resume would run them again\n"; b.String() != want {
		t.Errorf("reportUnlogged = %q, want %q", b.String(), want)
	}
	// A proxy's requests have no --resume: they are its clients' to send
	// again.
	rec.s.proxy = true
	rec.unlogged = []int64{7, 9}
	b.Reset()
	rec.reportUnlogged(&b)
	if want := "pace: job log x.log has no row for 2 requests sent upstream: 7 9\n"; b.String() != want {
		t.Errorf("reportUnlogged (proxy) = %q, want %q", b.String(), want)
	}
	rec.unlogged = nil
	b.Reset()
	rec.reportUnlogged(&b)
	if b.Len() != 0 {
		t.Errorf("reportUnlogged with every row written = %q, want nothing", b.String())
	}
}

func TestReportFailure(t *testing.T) {
	for _, tt := range []struct {
		r    runner.Result
		want string
	}{
		{runner.Result{Job: runner.Job{Seq: 2, Argv: []string{"sh", "-c", "exit 3"}}, ExitCode: 3},
			"pace: job 2 failed (exit status 3): sh -c 'exit 3'\n"},
		{runner.Result{Job: runner.Job{Seq: 4, Argv: []string{"sleep", "9"}}, ExitCode: -1, TimedOut: true, Timeout: time.Second},
			"pace: job 4 failed (timed out after 1s): sleep 9\n"},
		{runner.Result{Job: runner.Job{Seq: 5}, ExitCode: -1, Err: errors.New("runner: job 5: start nope: not found")},
			"pace: job 5: start nope: not found\n"},
	} {
		var b strings.Builder
		reportFailure(&b, nil, &tt.r)
		if b.String() != tt.want {
			t.Errorf("reportFailure(%s) = %q, want %q", tt.r.Status(), b.String(), tt.want)
		}
	}
}

// TestRecorderConcurrentFailures: failures may be read while events come.
func TestRecorderConcurrentFailures(t *testing.T) {
	path := filepath.Join(t.TempDir(), "jobs.log")
	jl, err := runlog.Open(runlog.Options{Path: path, Command: jobLogCommand}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jl.Close()
	rec, _ := recorderFor(testOptions(t, 1), jl, io.Discard, io.Discard, printOutput(false))
	var wg sync.WaitGroup
	wg.Go(func() {
		for seq := range int64(50) {
			rec.onEvent(done(seq+1, time.Unix(1, 0)))
		}
	})
	for range 50 {
		rec.failures()
	}
	wg.Wait()
	if unlogged, _, _, _ := rec.failures(); len(unlogged) != 50 {
		t.Errorf("%d items without a row, want 50", len(unlogged))
	}
}
