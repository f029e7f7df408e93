package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/throttletest"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// testFactory returns a factory with test streams, a fake clock and a
// signal channel the test controls.
func testFactory(stdin string) (*Factory, *throttletest.FakeClock, chan os.Signal, *strings.Builder, *strings.Builder) {
	ios, in, _, _ := Test()
	in.WriteString(stdin)
	out, errOut := &strings.Builder{}, &strings.Builder{}
	ios.Out, ios.ErrOut = &lockedWriter{w: out}, &lockedWriter{w: errOut}
	clock := throttletest.NewFakeClock(t0)
	sigs := make(chan os.Signal, 2)
	return &Factory{IOStreams: ios, Clock: clock, Signals: sigs}, clock, sigs, out, errOut
}

// lockedWriter lets a test read what goroutines write.
type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestRunOutputAndSummary(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprintf("stderr tty %v", tty), func(t *testing.T) {
			f, _, _, out, errOut := testFactory("a\nb b\nc\n")
			f.IOStreams.SetStderrTTY(tty)
			opts := &RunOptions{IO: f.IOStreams, Factory: f, Command: []string{"echo", "<{}>"},
				Common: CommonOptions{Jobs: 2, KeepOrder: true, Progress: progressAuto, Summary: summaryText}}
			if err := runRun(context.Background(), opts); err != nil {
				t.Fatalf("runRun = %v", err)
			}
			if got, want := out.String(), "<a>\n<b b>\n<c>\n"; got != want {
				t.Errorf("stdout = %q, want %q", got, want)
			}
			stderr := errOut.String()
			// With a fake clock, elapsed time and runtimes are 0.
			wantSummary := "pace: 3 ok, 0 failed, 0 retried in 0s (3 starts, 0.00/s)\n" +
				"  in flight  peak 2 of 2  binding\n" +
				"  job time   p50 0s       p95 0s  max 0s\n"
			if !strings.HasSuffix(stderr, wantSummary) {
				t.Errorf("stderr ends %q, want the summary %q", stderr, wantSummary)
			}
			if bar := strings.Contains(stderr, "\r"); bar != tty {
				t.Errorf("progress bar drawn = %v with stderr tty %v (auto): %q", bar, tty, stderr)
			}
		})
	}
}

func TestRunSummaryJSON(t *testing.T) {
	f, _, _, _, errOut := testFactory("1\n2\n3\n")
	opts := &RunOptions{IO: f.IOStreams, Factory: f, Command: []string{"sh", "-c", "exit $(( {} % 2 ))"},
		Common: CommonOptions{Jobs: 1, Rules: []throttle.Rule{{N: 100, Window: time.Second}}, Progress: progressNever, Summary: summaryJSON}}
	err := runRun(context.Background(), opts)
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Code != ExitFailed {
		t.Fatalf("runRun = %v, want exit %d", err, ExitFailed)
	}
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	var sum map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("last stderr line is not JSON: %v\n%s", err, errOut)
	}
	for k, want := range map[string]any{"ok": 1.0, "failed": 2.0, "attempts": 3.0, "exit_code": 1.0, "jobs": 1.0, "peak_in_flight": 1.0} {
		if sum[k] != want {
			t.Errorf("summary %s = %v, want %v", k, sum[k], want)
		}
	}
	rules, _ := sum["rules"].([]any)
	if len(rules) != 1 || rules[0].(map[string]any)["rule"] != "100/s" || rules[0].(map[string]any)["peak_usage"] != 0.03 {
		t.Errorf("summary rules = %v, want 100/s with peak 0.03", sum["rules"])
	}
	if !strings.Contains(errOut.String(), "pace: job 1 failed (exit status 1): sh -c 'exit $(( 1 % 2 ))'") {
		t.Errorf("no failure line for job 1 in %q", errOut)
	}
}

// blockingExec runs nothing: each job waits for the test or its context.
type blockingExec struct {
	started chan *runner.Job
	release chan struct{}
	mu      sync.Mutex
	causes  []error
}

func (*blockingExec) Prepare(job *runner.Job) error {
	job.Argv = []string{"block", job.Item}
	return nil
}

func (b *blockingExec) Execute(ctx context.Context, job *runner.Job) *runner.Result {
	b.started <- job
	select {
	case <-b.release:
		return &runner.Result{}
	case <-ctx.Done():
		b.mu.Lock()
		b.causes = append(b.causes, context.Cause(ctx))
		b.mu.Unlock()
		return &runner.Result{ExitCode: -1, Signal: 9}
	}
}

// startSession runs a session over items with a blocking executor.
func startSession(t *testing.T, f *Factory, o *CommonOptions, items string) (*blockingExec, func() error) {
	t.Helper()
	ex := &blockingExec{started: make(chan *runner.Job, 10), release: make(chan struct{})}
	in, _ := openInput("-", strings.NewReader(items))
	s := &session{f: f, opts: o, executor: ex, input: in, printResult: printOutput(false)}
	errc := make(chan error, 1)
	go func() { errc <- s.run(context.Background()) }()
	return ex, func() error {
		select {
		case err := <-errc:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("session did not end")
			return nil
		}
	}
}

func exitCode(err error) int {
	var e *ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestFirstSignalLetsJobsFinish(t *testing.T) {
	for _, tt := range []struct {
		sig  os.Signal
		code int
	}{{os.Interrupt, ExitInterrupted}, {syscall.SIGTERM, ExitTerminated}} {
		f, clock, sigs, _, errOut := testFactory("")
		o := &CommonOptions{Jobs: 2, Progress: progressNever, Summary: summaryText, Grace: time.Hour}
		ex, wait := startSession(t, f, o, "1\n2\n3\n4\n")
		<-ex.started
		<-ex.started
		sigs <- tt.sig
		clock.BlockUntilTimers(1) // the grace timer: the pool has been stopped
		close(ex.release)         // the two running jobs finish on their own
		err := wait()
		if got := exitCode(err); got != tt.code {
			t.Errorf("%v: exit %d, want %d", tt.sig, got, tt.code)
		}
		if len(ex.started) != 0 {
			t.Errorf("%v: %d more jobs started after the signal", tt.sig, len(ex.started))
		}
		want := fmt.Sprintf("pace: 2 ok, 0 failed, 0 retried in 0s (2 starts, 0.00/s), interrupted by %s", signalName(tt.sig))
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("%v: stderr %q, want %q", tt.sig, errOut, want)
		}
		if len(ex.causes) != 0 {
			t.Errorf("%v: jobs were cancelled (%v), want them left to finish", tt.sig, ex.causes)
		}
	}
}

func TestSecondSignalKillsAtOnce(t *testing.T) {
	f, _, sigs, _, errOut := testFactory("")
	o := &CommonOptions{Jobs: 2, Progress: progressNever, Summary: summaryNone, Grace: time.Hour}
	ex, wait := startSession(t, f, o, "1\n2\n3\n")
	<-ex.started
	<-ex.started
	sigs <- os.Interrupt
	sigs <- os.Interrupt
	if got := exitCode(wait()); got != ExitInterrupted {
		t.Errorf("exit %d, want %d", got, ExitInterrupted)
	}
	if len(ex.causes) != 2 || !errors.Is(ex.causes[0], runner.ErrKillNow) || !errors.Is(ex.causes[1], runner.ErrKillNow) {
		t.Errorf("job cancellation causes %v, want ErrKillNow twice", ex.causes)
	}
	if !strings.Contains(errOut.String(), "SIGINT again: killing 2 running jobs") {
		t.Errorf("stderr %q", errOut)
	}
}

func TestGracePeriodEnds(t *testing.T) {
	f, clock, sigs, _, errOut := testFactory("")
	o := &CommonOptions{Jobs: 1, Progress: progressNever, Summary: summaryNone, Grace: 5 * time.Second}
	ex, wait := startSession(t, f, o, "1\n2\n")
	<-ex.started
	sigs <- syscall.SIGTERM
	clock.BlockUntilTimers(1)
	clock.Advance(5 * time.Second)
	if got := exitCode(wait()); got != ExitTerminated {
		t.Errorf("exit %d, want %d", got, ExitTerminated)
	}
	if len(ex.causes) != 1 || !errors.Is(ex.causes[0], errGraceOver) {
		t.Errorf("causes %v, want the grace period's end", ex.causes)
	}
	if !strings.Contains(errOut.String(), "grace period of 5s over: stopping 1 running jobs") {
		t.Errorf("stderr %q", errOut)
	}
}

// failingLimiter admits n calls, then fails as a dead backend would.
type failingLimiter struct {
	mu sync.Mutex
	n  int
}

func (l *failingLimiter) Acquire(context.Context) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return nil, fmt.Errorf("redis: connection refused: %w", throttle.ErrBackend)
	}
	l.n--
	return func() {}, nil
}

func (*failingLimiter) Stats() throttle.Stats { return throttle.Stats{Binding: -1} }

func TestBackendFailureExits3(t *testing.T) {
	f, _, _, out, errOut := testFactory("a\nb\nc\nd\n")
	f.NewLimiter = func(*CommonOptions) (Limiter, error) { return &failingLimiter{n: 2}, nil }
	opts := &RunOptions{IO: f.IOStreams, Factory: f, Command: []string{"echo"},
		Common: CommonOptions{Jobs: 1, Progress: progressNever, Summary: summaryText}}
	err := runRun(context.Background(), opts)
	if got := exitCode(err); got != ExitBackend {
		t.Errorf("exit %d, want %d", got, ExitBackend)
	}
	if out.String() != "a\nb\n" {
		t.Errorf("stdout %q, want the two admitted jobs", out)
	}
	if !strings.Contains(errOut.String(), "pace: limiter failed: runner: admit job 3: redis: connection refused: throttle: backend unavailable") {
		t.Errorf("stderr %q", errOut)
	}
}

func TestVerboseLogsWaitsAndJobs(t *testing.T) {
	f, clock, _, _, errOut := testFactory("a\nb\nc\n")
	// Move the fake clock to the deadline whenever the limiter sleeps.
	done := make(chan struct{})
	defer func() { close(done); clock.NewTimer(time.Hour) }()
	go func() {
		for {
			clock.BlockUntilTimers(1)
			select {
			case <-done:
				return
			default:
			}
			if next, ok := clock.Next(); ok {
				clock.Set(next)
			}
		}
	}()
	opts := &RunOptions{IO: f.IOStreams, Factory: f, Command: []string{"true"},
		Common: CommonOptions{Jobs: 1, Verbose: true, Rules: []throttle.Rule{{N: 1, Window: time.Second}, {N: 100, Window: time.Minute}},
			Progress: progressNever, Summary: summaryNone}}
	if err := runRun(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	log := errOut.String()
	for _, want := range []string{
		`msg="job started" seq=1 attempt=1 slot=1 waited=0s cmd="true a"`,
		`msg=waited rule=1/s wait=1s`,
		`msg="job started" seq=3 attempt=1 slot=1 waited=1s cmd="true c"`,
		`msg="job finished" seq=2 attempt=1 status=ok`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("verbose log lacks %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "msg=waited"); n != 2 {
		t.Errorf("%d waits logged, want 2", n)
	}
}
