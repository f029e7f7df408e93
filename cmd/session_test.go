package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/internal/halt"
	"github.com/pace-cli/pace/internal/interrupt"
	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/limiter"
	"github.com/pace-cli/pace/internal/summary"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// Sessions run here with fake executors inside synctest bubbles: time is
// fake, so elapsed times, waits and grace periods are exact, and
// synctest.Wait says when everything that can happen has happened.

// syncBuffer is a bytes.Buffer safe for concurrent use: a session writes
// to stderr from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testIO returns Test streams whose stdin holds in, and whose stdout and
// stderr may be written by several goroutines.
func testIO(in string) (*IOStreams, *syncBuffer, *syncBuffer) {
	ios, _, _, _ := Test()
	ios.In = strings.NewReader(in)
	out, errOut := &syncBuffer{}, &syncBuffer{}
	ios.Out, ios.ErrOut = out, errOut
	return ios, out, errOut
}

// exitCode returns the exit code a run function's error stands for.
func exitCode(err error) int {
	var e *ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &e):
		return e.Code
	}
	return -1
}

// fakeExec is an executor that runs nothing: each job prints its item on
// stdout and exits with exit(item) after took, or once block is closed
// when block is set; jobs for which hang(item) holds run until killed. A
// job whose context ends first is "killed".
type fakeExec struct {
	took  time.Duration
	block chan struct{}
	exit  func(item string) int
	hang  func(item string) bool

	mu     sync.Mutex
	ran    []string
	causes []error // why killed jobs were cancelled
}

func (e *fakeExec) Prepare(job *runner.Job) error {
	job.Argv = []string{"fake", job.Item}
	return nil
}

func (e *fakeExec) Execute(ctx context.Context, job *runner.Job) *runner.Result {
	e.mu.Lock()
	e.ran = append(e.ran, job.Item)
	e.mu.Unlock()
	if hang := e.hang != nil && e.hang(job.Item); hang || e.took > 0 || e.block != nil {
		var took <-chan time.Time
		if e.took > 0 && !hang {
			t := time.NewTimer(e.took)
			defer t.Stop()
			took = t.C
		}
		select {
		case <-took:
		case <-block(e.block, hang):
		case <-ctx.Done():
			e.mu.Lock()
			e.causes = append(e.causes, context.Cause(ctx))
			e.mu.Unlock()
			return &runner.Result{ExitCode: -1, Signal: int(syscall.SIGKILL), Stdout: runner.NewCapture(0, "")}
		}
	}
	out := runner.NewCapture(0, "")
	fmt.Fprintln(out, job.Item)
	code := 0
	if e.exit != nil {
		code = e.exit(job.Item)
	}
	return &runner.Result{ExitCode: code, Stdout: out}
}

// block returns c, or nil (never ready) for a job that hangs.
func block(c chan struct{}, hang bool) chan struct{} {
	if hang {
		return nil
	}
	return c
}

// started returns the items whose jobs have started.
func (e *fakeExec) started() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.ran)
}

// killedBy returns why the jobs that were killed were cancelled.
func (e *fakeExec) killedBy() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.causes)
}

// testOptions returns the options of a run with jobs at once under rules,
// without progress, with a text summary and a grace period of an hour.
func testOptions(t *testing.T, jobs int, rules ...string) *CommonOptions {
	t.Helper()
	o := &CommonOptions{Jobs: jobs, Input: "-", Progress: progressNever, ProgressInterval: defaultProgressInterval,
		Summary: summaryText, Grace: time.Hour}
	for _, r := range rules {
		rs, err := throttle.ParseRules(r)
		if err != nil {
			t.Fatal(err)
		}
		o.Rules = append(o.Rules, rs...)
	}
	return o
}

// testSession is a session over the items of stdin, and what it writes.
type testSession struct {
	s           *session
	sigs        chan os.Signal
	out, errOut *syncBuffer
}

// newTestSession returns a session of ex over the items stdin holds, with
// options o. In a
// synctest bubble, call it inside the bubble.
func newTestSession(t *testing.T, stdin string, o *CommonOptions, ex runner.Executor) *testSession {
	t.Helper()
	ios, out, errOut := testIO(stdin)
	sigs := make(chan os.Signal, 2)
	in, err := items.Open(o.Input, ios.In)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	s := &session{
		f: &Factory{IOStreams: ios, Signals: sigs}, opts: o, executor: ex, input: in,
		print: printOutput(o.Tag), logCommand: jobLogCommand, show: func(j *runner.Job) string { return j.Item }, filesPerJob: 6,
	}
	return &testSession{s: s, sigs: sigs, out: out, errOut: errOut}
}

// run runs the session and returns its exit code.
func (ts *testSession) run() int { return exitCode(ts.s.run(context.Background())) }

// start runs the session in a goroutine; wait returns its exit code.
func (ts *testSession) start() (wait func() int) {
	done := make(chan int, 1)
	go func() { done <- ts.run() }()
	return func() int { return <-done }
}

// lastLine returns the last line of s.
func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func TestSessionOutputAndSummary(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprintf("stderr tty %v", tty), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := testOptions(t, 2)
				o.KeepOrder, o.Progress = true, progressAuto
				ts := newTestSession(t, "a\nb b\nc\n", o, &fakeExec{took: 100 * time.Millisecond})
				ts.s.f.IOStreams.SetStderrTTY(tty)
				if code := ts.run(); code != ExitOK {
					t.Fatalf("run = exit %d, want 0\n%s", code, ts.errOut)
				}
				if got, want := ts.out.String(), "a\nb b\nc\n"; got != want {
					t.Errorf("stdout = %q, want %q", got, want)
				}
				// a and b run at 0, c at 100ms: 3 starts in 200ms, shown
				// over a second. A short clean run at a terminal gets
				// the first line alone.
				want := "pace: 3 ok, 0 failed, 0 retried in 200ms (3 starts, 3.00/s)\n"
				if !tty {
					want += "  in flight  peak 2 of 2  binding\n" +
						"  job time   p50 100ms    p95 100ms  max 100ms\n"
				}
				stderr := ts.errOut.String()
				if !strings.HasSuffix(stderr, want) {
					t.Errorf("stderr = %q, want it to end with the summary %q", stderr, want)
				}
				// auto: a bar on a terminal, else status lines, of which a
				// run shorter than --progress-interval has none.
				if bar := strings.Contains(stderr, "\r"); bar != tty {
					t.Errorf("stderr tty %v: bar drawn = %v, want %v: %q", tty, bar, tty, stderr)
				}
				if !tty && stderr != want {
					t.Errorf("stderr = %q, want only the summary %q", stderr, want)
				}
			})
		})
	}
}

func TestSessionFailuresAndJSONSummary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testOptions(t, 1, "100/s")
		o.Summary = summaryJSON
		ex := &fakeExec{exit: func(item string) int { return map[string]int{"1": 1, "3": 2}[item] }}
		ts := newTestSession(t, "1\n2\n3\n", o, ex)
		if code := ts.run(); code != ExitFailed {
			t.Fatalf("run = exit %d, want %d\n%s", code, ExitFailed, ts.errOut)
		}
		stderr := ts.errOut.String()
		for _, want := range []string{
			"pace: job 1 failed (exit status 1): fake 1\n",
			"pace: job 3 failed (exit status 2): fake 3\n",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr = %q, want a line %q", stderr, want)
			}
		}
		var sum struct {
			OK, Failed, Attempts int64
			ExitCode             int                  `json:"exit_code"`
			FailedItems          []summary.FailedItem `json:"failed_items"`
			Rules                []struct {
				Rule      string
				PeakUsage float64 `json:"peak_usage"`
			}
		}
		if err := json.Unmarshal([]byte(lastLine(stderr)), &sum); err != nil {
			t.Fatalf("last line of stderr is not JSON: %v\n%s", err, stderr)
		}
		wantFailed := []summary.FailedItem{{Seq: 1, Item: "1", Status: "exit status 1"}, {Seq: 3, Item: "3", Status: "exit status 2"}}
		if sum.OK != 1 || sum.Failed != 2 || sum.Attempts != 3 || sum.ExitCode != ExitFailed || !slices.Equal(sum.FailedItems, wantFailed) {
			t.Errorf("summary = %+v, want 1 ok, 2 failed (%v), 3 attempts, exit 1", sum, wantFailed)
		}
		if len(sum.Rules) != 1 || sum.Rules[0].Rule != "100/s" || sum.Rules[0].PeakUsage != 0.03 {
			t.Errorf("summary rules = %+v, want 100/s with peak 0.03", sum.Rules)
		}
	})
}

func TestSessionFirstSignalLetsJobsFinish(t *testing.T) {
	for _, tt := range []struct {
		sig  os.Signal
		code int
	}{{os.Interrupt, ExitInterrupted}, {syscall.SIGTERM, ExitTerminated}} {
		t.Run(interrupt.Name(tt.sig), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ex := &fakeExec{block: make(chan struct{})}
				ts := newTestSession(t, "1\n2\n3\n4\n", testOptions(t, 2), ex)
				wait := ts.start()
				synctest.Wait()
				ts.sigs <- tt.sig
				synctest.Wait()
				close(ex.block) // the two running jobs finish on their own
				if code := wait(); code != tt.code {
					t.Errorf("run = exit %d, want %d", code, tt.code)
				}
				if got := ex.started(); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"1", "2"}) {
					t.Errorf("jobs started: %q, want 1 and 2 only", got)
				}
				if causes := ex.killedBy(); len(causes) > 0 {
					t.Errorf("jobs killed (%v), want them left to finish", causes)
				}
				stderr := ts.errOut.String()
				for _, want := range []string{
					"pace: " + interrupt.Name(tt.sig) + ": starting no more jobs; waiting up to 1h0m0s for 2 running (interrupt again to kill them)\n",
					"pace: 2 ok, 0 failed, 0 retried in 0s (2 starts, 2.00/s), interrupted by " + interrupt.Name(tt.sig) + "\n",
				} {
					if !strings.Contains(stderr, want) {
						t.Errorf("stderr = %q, want a line %q", stderr, want)
					}
				}
				if got := ts.out.String(); got != "1\n2\n" && got != "2\n1\n" {
					t.Errorf("stdout = %q, want the output of jobs 1 and 2", got)
				}
			})
		})
	}
}

func TestSessionSecondSignalKillsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := &fakeExec{block: make(chan struct{})}
		ts := newTestSession(t, "1\n2\n3\n", testOptions(t, 2), ex)
		wait := ts.start()
		synctest.Wait()
		ts.sigs <- os.Interrupt
		synctest.Wait()
		ts.sigs <- os.Interrupt
		if code := wait(); code != ExitInterrupted {
			t.Errorf("run = exit %d, want %d", code, ExitInterrupted)
		}
		causes := ex.killedBy()
		if len(causes) != 2 || !errors.Is(causes[0], runner.ErrKillNow) || !errors.Is(causes[1], runner.ErrKillNow) {
			t.Errorf("jobs cancelled by %v, want ErrKillNow twice", causes)
		}
		stderr := ts.errOut.String()
		for _, want := range []string{
			"pace: SIGINT again: killing 2 running jobs\n",
			"pace: job 1 failed (killed by SIGKILL): fake 1\n",
			"pace: 0 ok, 2 failed, 0 retried in 0s (2 starts, 2.00/s), interrupted by SIGINT\n",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr = %q, want a line %q", stderr, want)
			}
		}
	})
}

func TestSessionGracePeriodEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := &fakeExec{block: make(chan struct{})}
		o := testOptions(t, 1)
		o.Grace = 5 * time.Second
		ts := newTestSession(t, "1\n2\n", o, ex)
		wait := ts.start()
		synctest.Wait()
		ts.sigs <- syscall.SIGTERM
		time.Sleep(o.Grace - time.Nanosecond)
		synctest.Wait()
		if causes := ex.killedBy(); len(causes) > 0 {
			t.Fatalf("job killed (%v) before the grace period of %v ended", causes, o.Grace)
		}
		if code := wait(); code != ExitTerminated {
			t.Errorf("run = exit %d, want %d", code, ExitTerminated)
		}
		if causes := ex.killedBy(); len(causes) != 1 || !errors.Is(causes[0], interrupt.ErrGraceOver) {
			t.Errorf("job cancelled by %v, want the end of the grace period", causes)
		}
		if want := "pace: grace period of 5s over: stopping 1 running job\n"; !strings.Contains(ts.errOut.String(), want) {
			t.Errorf("stderr = %q, want a line %q", ts.errOut, want)
		}
	})
}

// failAfter is a backend that admits n calls, then fails every admission
// with err, as a Redis that went away or a quota taken over by other rules.
type failAfter struct {
	throttle.Backend
	err error

	mu sync.Mutex
	n  int
}

func (b *failAfter) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	b.mu.Lock()
	if b.n == 0 {
		b.mu.Unlock()
		return throttle.Admission{}, b.err
	}
	b.n--
	b.mu.Unlock()
	return b.Backend.Admit(ctx, cost)
}

// openWith returns a Factory.OpenBackend that opens the in-memory limiter
// and wraps it with wrap.
func openWith(wrap func(throttle.Backend) throttle.Backend) func(context.Context, limiter.Options, io.Writer) (throttle.Backend, error) {
	return func(_ context.Context, o limiter.Options, _ io.Writer) (throttle.Backend, error) {
		l, err := throttle.New(throttle.Options{Rules: o.Rules})
		if err != nil {
			return nil, err
		}
		return wrap(l), nil
	}
}

func TestSessionLimiterFails(t *testing.T) {
	errDown := fmt.Errorf("redis: connection refused: %w", throttle.ErrBackend)
	errMismatch := &throttle.MismatchError{Key: "k", Stored: "5/s", Spec: "6/s"}
	for _, tt := range []struct {
		name    string
		err     error
		admit   int
		code    int
		stdout  string
		message string
	}{
		{"backend down after 2", errDown, 2, ExitBackend, "1\n2\n",
			"pace: limiter failed: admit job 3: redis: connection refused: backend unavailable\n"},
		{"rules mismatch at the first admission", errMismatch, 0, ExitUsage, "",
			"pace: limiter failed: admit job 1: quota \"k\" is kept with rules \"5/s\", this process has \"6/s\" (use the same rules everywhere, another quota name, or wait for the quota's longest window to pass unused)\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := testOptions(t, 1)
				o.KeepOrder = true
				ts := newTestSession(t, "1\n2\n3\n4\n", o, &fakeExec{})
				ts.s.f.OpenBackend = openWith(func(b throttle.Backend) throttle.Backend { return &failAfter{Backend: b, err: tt.err, n: tt.admit} })
				if code := ts.run(); code != tt.code {
					t.Errorf("run = exit %d, want %d", code, tt.code)
				}
				if got := ts.out.String(); got != tt.stdout {
					t.Errorf("stdout = %q, want %q (the jobs admitted)", got, tt.stdout)
				}
				stderr := ts.errOut.String()
				if !strings.Contains(stderr, tt.message) || !strings.Contains(stderr, ", stopped: the limiter failed\n") {
					t.Errorf("stderr = %q, want %q and a summary saying the limiter failed", stderr, tt.message)
				}
			})
		})
	}
}

func TestSessionBackendDoesNotOpen(t *testing.T) {
	for _, tt := range []struct {
		err  error
		code int
	}{
		{fmt.Errorf("redis redis://h:1: no answer for 1s: %w", throttle.ErrBackend), ExitBackend},
		{&throttle.MismatchError{Key: "k", Stored: "5/s", Spec: "6/s"}, ExitUsage},
		{&throttle.RuleError{Spec: "0/s", Want: "a limit of at least 1 call"}, ExitUsage},
	} {
		synctest.Test(t, func(t *testing.T) {
			ex := &fakeExec{}
			ts := newTestSession(t, "1\n", testOptions(t, 1), ex)
			ts.s.f.OpenBackend = func(context.Context, limiter.Options, io.Writer) (throttle.Backend, error) { return nil, tt.err }
			if code := ts.run(); code != tt.code {
				t.Errorf("open fails with %q: exit %d, want %d", tt.err, code, tt.code)
			}
			// One line, without the libraries' package prefixes.
			if got, want := ts.errOut.String(), "pace: "+strings.TrimPrefix(tt.err.Error(), "throttle: ")+"\n"; got != want {
				t.Errorf("open fails with %q: stderr = %q, want %q", tt.err, got, want)
			}
			if len(ex.started()) > 0 {
				t.Errorf("open fails with %q: jobs %q ran", tt.err, ex.started())
			}
		})
	}
}

func TestSessionSignalWhileOpening(t *testing.T) {
	for _, tt := range []struct {
		sig  os.Signal
		code int
	}{{os.Interrupt, ExitInterrupted}, {syscall.SIGTERM, ExitTerminated}} {
		synctest.Test(t, func(t *testing.T) {
			ex := &fakeExec{}
			ts := newTestSession(t, "1\n", testOptions(t, 1), ex)
			// A backend that takes its time to answer, such as a Redis that
			// is down, until the setup is cancelled.
			ts.s.f.OpenBackend = func(ctx context.Context, _ limiter.Options, _ io.Writer) (throttle.Backend, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			wait := ts.start()
			synctest.Wait()
			ts.sigs <- tt.sig
			if code := wait(); code != tt.code {
				t.Errorf("%v while opening the backend: exit %d, want %d", tt.sig, code, tt.code)
			}
			// One line: the session's. The handler says nothing before
			// the run starts.
			name := interrupt.Name(tt.sig)
			if want := "pace: " + name + ": stopped before anything ran\n"; ts.errOut.String() != want {
				t.Errorf("%v while opening the backend: stderr = %q, want %q", tt.sig, ts.errOut, want)
			}
			if len(ex.started()) > 0 {
				t.Errorf("jobs %q ran", ex.started())
			}
		})
	}
}

func TestSessionVerboseLogsWaitsAndJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testOptions(t, 1, "1/s", "100/min")
		o.Verbose, o.Summary = true, summaryNone
		ts := newTestSession(t, "a\nb\nc\n", o, &fakeExec{})
		if code := ts.run(); code != ExitOK {
			t.Fatalf("run = exit %d\n%s", code, ts.errOut)
		}
		log := ts.errOut.String()
		for _, want := range []string{
			`time=00:00:00.000 level=INFO msg="job started" seq=1 attempt=1 slot=1 waited=0s cmd="fake a"` + "\n",
			`time=00:00:01.000 level=INFO msg=waited on=1/s wait=1s margin=0s` + "\n",
			`time=00:00:02.000 level=INFO msg="job started" seq=3 attempt=1 slot=1 waited=1s cmd="fake c"` + "\n",
			`time=00:00:01.000 level=INFO msg="job finished" seq=2 attempt=1 status=ok duration=0s retry=false` + "\n",
		} {
			if !strings.Contains(log, want) {
				t.Errorf("verbose log lacks %q:\n%s", want, log)
			}
		}
		if n := strings.Count(log, "msg=waited"); n != 2 {
			t.Errorf("%d waits logged, want 2:\n%s", n, log)
		}
	})
}

func TestSessionReadError(t *testing.T) {
	errDisk := errors.New("disk on fire")
	for _, tt := range []struct {
		name string
		in   io.Reader
		code int
		ran  []string
	}{
		// Nothing ran: the input was unusable, a usage error.
		{"at once", iotest.ErrReader(errDisk), ExitUsage, nil},
		{"after an item", io.MultiReader(strings.NewReader("a\n"), iotest.ErrReader(errDisk)), ExitFailed, []string{"a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ex := &fakeExec{}
				ts := newTestSession(t, "", testOptions(t, 1), ex)
				ts.s.input = items.NewInput(tt.in, "stdin")
				if code := ts.run(); code != tt.code {
					t.Errorf("run = exit %d, want %d", code, tt.code)
				}
				if got := ex.started(); !slices.Equal(got, tt.ran) {
					t.Errorf("jobs started: %q, want %q", got, tt.ran)
				}
				stderr := ts.errOut.String()
				if !strings.Contains(stderr, "pace: stdin: read items: disk on fire\n") || !strings.Contains(stderr, ", stopped: the input could not be read\n") {
					t.Errorf("stderr = %q, want the read error and a summary saying the input could not be read", stderr)
				}
			})
		})
	}
}

func TestSessionSaysItReadsTheTerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testOptions(t, 1)
		o.Summary = summaryNone
		ts := newTestSession(t, "a\n", o, &fakeExec{})
		ts.s.f.IOStreams.SetStdinTTY(true)
		if code := ts.run(); code != ExitOK {
			t.Fatalf("run = exit %d", code)
		}
		if got, want := ts.errOut.String(), "pace: reading items from the terminal, one per line; end with Ctrl-D\n"; got != want {
			t.Errorf("stderr = %q, want %q", got, want)
		}
	})
}

func TestSessionSummaryFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "summary.json")
		o := testOptions(t, 2, "10/s")
		o.Summary, o.SummaryFile = summaryJSON, path
		ts := newTestSession(t, "1\n2\n3\n", o, &fakeExec{took: time.Second})
		if code := ts.run(); code != ExitOK {
			t.Fatalf("run = exit %d\n%s", code, ts.errOut)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The file holds the summary --summary json writes, indented.
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			t.Fatalf("%s is not JSON: %v\n%s", path, err, b)
		}
		if got, want := compact.String(), lastLine(ts.errOut.String()); got != want {
			t.Errorf("%s holds\n%s\nwant the summary on stderr\n%s", path, got, want)
		}
		if !bytes.HasPrefix(b, []byte("{\n  \"schema_version\": 1,\n")) || !bytes.HasSuffix(b, []byte("}\n")) {
			t.Errorf("%s = %q, want indented JSON ending in a newline", path, b)
		}
		if names, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*")); len(names) != 1 {
			t.Errorf("files beside the summary: %q, want none (temporary files removed)", names)
		}
	})
}

// TestSessionSummaryFileFails: a summary file that cannot be written at
// the end (its directory went away during the run; a missing one is
// refused before anything runs) fails the run with one line.
func TestSessionSummaryFileFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testOptions(t, 1)
		o.Summary, o.SummaryFile = summaryNone, filepath.Join(t.TempDir(), "no", "such", "dir", "summary.json")
		ts := newTestSession(t, "1\n", o, &fakeExec{})
		if code := ts.run(); code != ExitFailed {
			t.Errorf("run = exit %d, want %d: every job succeeded, but the summary file was not written", code, ExitFailed)
		}
		if stderr := ts.errOut.String(); !strings.HasPrefix(stderr, "pace: --summary-file ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("stderr = %q, want one line saying the summary file could not be written", stderr)
		}
	})
}

// TestSessionHaltNowCounts: --halt now names how many running jobs it
// kills, in the singular for one.
func TestSessionHaltNowCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ex := &fakeExec{took: time.Second, exit: func(string) int { return 1 }, hang: func(item string) bool { return item == "2" }}
		o := testOptions(t, 2)
		h, err := halt.Parse("now,fail=1")
		if err != nil {
			t.Fatal(err)
		}
		o.Halt = h
		ts := newTestSession(t, "1\n2\n", o, ex)
		ts.run()
		if want := "pace: --halt now,fail=1: job 1 ended it; killing 1 running job\n"; !strings.Contains(ts.errOut.String(), want) {
			t.Errorf("stderr = %q, want a line %q", ts.errOut, want)
		}
	})
}
