package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pace-cli/pace/internal/halt"
	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/internal/interrupt"
	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/jobctl"
	"github.com/pace-cli/pace/internal/metrics"
	"github.com/pace-cli/pace/internal/osfiles"
	"github.com/pace-cli/pace/internal/runlog"
	"github.com/pace-cli/pace/internal/summary"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/learn"
	"github.com/pace-cli/pace/throttle/pacehttp"
)

// session is one run of a pool over the items of an input with the
// common options: pace run and pace fetch differ only in the executor and
// in how a result is printed. Its life has three parts: setup (backend,
// job log, display), one supervisor that owns every goroutine of the run
// (reader, interrupts, progress, pool), and a pure function from what
// happened to the summary and the exit code (summarize).
type session struct {
	f    *Factory
	opts *CommonOptions
	// executor prepares and runs each job; useBackend, if set, hands it
	// the backend once the run starts, and returns the transport through
	// which it listens to the server (pace fetch): the pool admits
	// through its Backend, which keeps the rules learned from the server.
	// hint says a thing on stderr.
	executor runner.Executor
	// jobs, if set, signals the running jobs' process groups: they stop
	// and continue with pace (Ctrl-Z). opened, if set, is given the
	// backend once it is open, before any job starts.
	jobs       interface{ SignalRunning(os.Signal) }
	opened     func(throttle.Backend)
	useBackend func(b throttle.Backend, hint func(string), remaining func() int64) *pacehttp.Transport
	// input and readOpts say where the items come from.
	input    *items.Input
	readOpts items.ReadOptions
	// print prints an item's final result: its output on out (stdout)
	// and errOut (stderr); it returns the error of writing either, which
	// fails the item.
	print func(out, errOut io.Writer, r *runner.Result) error
	// logCommand makes the job log's Command column.
	logCommand func(*runner.Job) string
	// show returns a job's item as it may be shown (credentials
	// redacted).
	show func(j *runner.Job) string
	// filesPerJob is how many file descriptors a job may hold at once,
	// for the cap on -j that the open-file limit sets.
	filesPerJob int
	// metrics feeds --metrics-addr.
	metrics metrics.Source
	// openOut, if set, opens where job output goes instead of stdout
	// (pace fetch -o /dev/null); ctx bounds the wait for a FIFO's reader.
	openOut func(ctx context.Context) (io.WriteCloser, error)
	out     io.Writer // what openOut opened; nil: job output goes to stdout
	// proxy marks pace proxy's session: its transport admits and adapts
	// the margin itself, and the clients see their failures (no line on
	// stderr for each).
	proxy bool
}

// run runs the session and returns nil or an *ExitError with the exit
// code; everything has been reported by then.
func (s *session) run(ctx context.Context) error {
	ios, o := s.f.IOStreams, s.opts
	disp := s.newDisplay()
	disp.typed = ios.IsStdinTTY() && s.input.R == ios.In
	errOut := displayWriter{disp, ios.ErrOut}
	if s.jobs != nil {
		defer jobctl.Follow(s.jobs.SignalRunning, disp.stopped)()
	}

	// Interrupts: before the run, the first one cancels the setup.
	setupCtx, cancelSetup := context.WithCancel(ctx)
	defer cancelSetup()
	s.f.catchStopSignals()
	sigs := &interrupt.Handler{Signals: s.f.Signals, Grace: o.Grace, Out: errOut}
	sigs.Watch(cancelSetup)
	defer sigs.Close()

	if s.openOut != nil {
		w, err := s.openOut(setupCtx)
		if err != nil {
			if sig := sigs.Signal(); sig != nil {
				return stoppedBeforeRun(ios, sig)
			}
			return reportf(ios, ExitUsage, "%v", err)
		}
		defer w.Close()
		s.out = w
	}

	jobs := o.Jobs
	if limit, ok := osfiles.Limit(); ok {
		if n := osfiles.JobsFor(jobs, s.filesPerJob, limit); n < jobs {
			fmt.Fprintf(errOut, "pace: warning: -j %d needs about %d open files, but only %d may be open (ulimit -n); running %d %s at once\n",
				jobs, osfiles.Reserved+jobs*s.filesPerJob, limit, n, plural(n, "job"))
			jobs = n
		}
	}

	backend, jl, closeRun, err := s.open(setupCtx, errOut, sigs)
	if err != nil {
		return err
	}
	defer closeRun()
	if s.opened != nil {
		s.opened(backend)
	}

	res := s.supervise(ctx, backend, jl, jobs, disp, sigs)
	if err := jl.Close(); err != nil && res.jobLogErr == nil {
		res.jobLogErr = err
		ios.sayf("%v", err)
	}
	return s.finish(ctx, res, disp.mode, sigs)
}

// newDisplay returns the progress display the options ask for: -q draws
// none unless --progress asks for it.
func (s *session) newDisplay() *display {
	mode := s.opts.Progress
	if s.opts.Quiet && mode == progressAuto {
		mode = progressNever
	}
	return newDisplay(s.f.IOStreams, mode, s.opts.ProgressInterval)
}

// open opens what a run reports to and admits through: the metrics server
// (--metrics-addr), the backend, and the job log, whose earlier rows it
// gives the backend. ctx bounds the setup; an interrupt (sigs) cancels
// it. Its error has been reported (an *ExitError); closeRun closes
// everything once the run is over, except the job log (jl.Close).
func (s *session) open(ctx context.Context, errOut io.Writer, sigs *interrupt.Handler) (backend throttle.Backend, jl *runlog.Log, closeRun func(), err error) {
	ios, o := s.f.IOStreams, s.opts
	var closers []func()
	closeRun = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	if o.MetricsAddr != "" {
		srv, err := metrics.Serve(o.MetricsAddr, s.metrics.Get)
		if err != nil {
			return nil, nil, nil, reportf(ios, ExitUsage, "--metrics-addr %s: %s", o.MetricsAddr, userMessage(err))
		}
		closers = append(closers, func() { srv.Close() })
		fmt.Fprintf(errOut, "pace: metrics at http://%s/metrics\n", srv.Addr())
	}
	stopped := func() error {
		closeRun()
		return stoppedBeforeRun(ios, sigs.Signal())
	}

	backend, err = s.f.openBackend(ctx, o.backendOptions(), errOut)
	if err != nil {
		if sigs.Signal() != nil {
			return nil, nil, nil, stopped()
		}
		closeRun()
		return nil, nil, nil, reportf(ios, backendExitCode(err, ExitUsage), "%s", userMessage(err))
	}
	closers = append(closers, func() { backend.Close() })

	// The job log: earlier rows count against the rules (package runlog).
	var prepare func(*runner.Job) error
	if s.executor != nil {
		prepare = s.executor.Prepare
	}
	jl, err = runlog.Open(o.JobLogOptions.runlog(prepare, s.logCommand), o.allRules())
	if err != nil {
		closeRun()
		return nil, nil, nil, reportf(ios, ExitUsage, "%v", err)
	}
	recent, err := jl.Seed(backend, o.allRules(), time.Now())
	if err != nil {
		jl.Close()
		closeRun()
		return nil, nil, nil, reportf(ios, ExitUsage, "%v", err)
	}
	var announced strings.Builder // the log's path, shown as pace shows paths
	jl.Announce(&announced, recent, o.Verbose)
	io.WriteString(errOut, ios.shown(announced.String()))
	if sigs.Signal() != nil {
		jl.Close()
		return nil, nil, nil, stopped()
	}
	return backend, jl, closeRun, nil
}

// finish writes the summary of what happened (res) on stderr, as
// --summary asks, and to --summary-file; mode is the display's. It
// returns nil or an *ExitError with the exit code.
func (s *session) finish(ctx context.Context, res *runFacts, mode string, sigs *interrupt.Handler) error {
	ios, o := s.f.IOStreams, s.opts
	sum, code := summarize(res)
	if ios.shown(sum.JobLog) != sum.JobLog {
		// A job log named like a URL with credentials: the command that
		// would draw it cannot be shown.
		sum.JobLog = ""
	}
	sum.Brief = briefSummary(sum, mode)
	// -q: no summary unless something failed (pace proxy -- CMD exits
	// with CMD's status, whatever the requests did, unless their rows
	// could not be written).
	if !o.Quiet || code != ExitOK || sum.Failed > 0 {
		if err := writeSummary(ios.ErrOut, o.Summary, sum); err != nil && code == ExitOK {
			code = ExitFailed
		}
	}
	if o.SummaryFile != "" {
		// A FIFO waits for its reader; an interrupt gives up.
		sumCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		sigs.Arm(func() int { return 0 }, cancel, func(error) { cancel() })
		if err := writeSummaryFile(sumCtx, o.SummaryFile, sum); err != nil {
			ios.sayf("%v", err)
			if code == ExitOK {
				code = ExitFailed
			}
		}
	}
	if code != ExitOK {
		return &ExitError{Code: code, Signal: res.dieOf(code)}
	}
	return nil
}

// briefUnder is the length under which a clean run at a terminal gets a
// one-line summary.
const briefUnder = 10 * time.Second

// briefSummary reports whether s is worth only its first line: a run
// shorter than briefUnder, drawn with a bar (at a terminal, where a
// person reads it), in which nothing failed, stopped, or was paused or
// learned from the server. CI logs (status lines) keep the details.
func briefSummary(s *summary.Summary, mode string) bool {
	return mode == progressAlways && s.ExitCode == ExitOK && s.Elapsed < briefUnder &&
		s.Interrupted == "" && s.Stopped == "" && s.NotStarted == 0 && s.Learned == nil &&
		(s.HTTP == nil || s.HTTP.Pauses == 0)
}

// runFacts is what happened during a run: everything the summary and the
// exit code are made of.
type runFacts struct {
	opts     *CommonOptions
	jobs     int // -j after the open-file cap
	elapsed  time.Duration
	tally    summary.Snapshot
	stats    throttle.Stats
	skipped  int64 // items a --resume skipped
	total    int64 // items in the input, -1 if unknown
	read     int64 // items read from the input
	readAll  bool  // the input was read to its end
	readErr  error
	limitErr error // the backend failed
	signal   string
	pipe     bool // stdout closed by its reader
	// jobLogErr and outputErr: the first failure to write a row or a
	// job's output, which stopped admissions; serverStop, the first job
	// whose server asked for a pause past --max-server-pause.
	jobLogErr, outputErr, serverStop error
	unlogged                         []int64 // items that ran but have no row
	learned                          *summary.Learned
	halted                           *halt.Halted // --halt stopped the run
	// proxy is what pace proxy did with requests it sent nowhere;
	// command, the exit status of its -- CMD, which is pace's.
	proxy   *ProxySummary
	command *int
	// commandSignal is the signal that gave pace proxy -- CMD its exit
	// status: the one that killed CMD, or one that came once CMD had
	// exited 0.
	commandSignal os.Signal
}

// supervise runs the pool over the input with every goroutine the run
// needs, and returns once all of them have ended.
func (s *session) supervise(ctx context.Context, backend throttle.Backend, jl *runlog.Log, jobs int, disp *display, sigs *interrupt.Handler) *runFacts {
	ios, o := s.f.IOStreams, s.opts
	errOut := displayWriter{disp, ios.ErrOut}
	facts := &runFacts{opts: o, jobs: jobs, total: -1}

	jobCtx, cancelJobs := context.WithCancelCause(ctx)
	defer cancelJobs(nil)
	readCtx, cancelRead := context.WithCancel(jobCtx)
	defer cancelRead()

	var pool *runner.Pool
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { pool.Stop(); cancelRead() }) }

	// total is the number of items the run will start, once known: at
	// the input's end, or sooner from counting a regular file.
	total := newTotal()
	var rec *recorder
	var tr *pacehttp.Transport
	if s.useBackend != nil {
		// The learner probes the server's limit only when the items
		// left could repay a refusal.
		remaining := func() int64 {
			if n := total.get(); n >= 0 {
				return max(n-rec.tally.ItemsStarted(), 0)
			}
			return -1
		}
		tr = s.useBackend(backend, func(msg string) { fmt.Fprintf(errOut, "pace: %s\n", msg) }, remaining)
		backend = tr.Backend()
	}
	rec = newRecorder(s, backend, jl, disp, errOut, stop)
	rec.tally.Seed(jl.EarlierCalls()) // the ETA counts what earlier runs spent
	s.metrics.Set(func() metrics.Snapshot { return metrics.Of(rec.tally.Snapshot(), backend.Stats()) })
	rec.kill = func() { cancelJobs(runner.ErrKillNow) }
	rec.out.OnBroken(func() {
		// Stop at once, so that no job starts (and spends quota) after
		// stdout has gone: stop takes no lock of the display's. The
		// write that found out holds that lock, so the message and the
		// kill go from a goroutine of their own.
		stop()
		go func() {
			fmt.Fprintf(errOut, "pace: stdout closed: starting no more jobs, killing %d running\n", rec.tally.InFlight())
			cancelJobs(runner.ErrKillNow)
		}()
	})

	var limiter runner.Limiter = backend
	if rec.log != nil {
		limiter = loggingLimiter{Backend: backend, log: rec.log, reorder: o.Reorder}
	}
	var err error
	pool, err = runner.NewPool(runner.Options{
		Jobs: jobs, Limiter: limiter, Executor: s.executor, Retries: o.Retries,
		KeepOrder: o.KeepOrder, OnEvent: rec.onEvent, RetryDelay: runner.HTTPRetryDelay, Reorder: o.Reorder,
	})
	if err != nil { // the options were checked: unreachable
		panic(err)
	}
	// Killed (a second signal, the end of --grace), pace waits for a
	// stalled stdout no longer.
	sigs.Arm(rec.tally.InFlight, stop, func(cause error) { cancelJobs(cause); rec.out.GiveUp() })

	// The reader: items as they arrive, counted. At the input's end the
	// total is known, if counting the input did not tell it before.
	feed := items.NewFeed(readCtx, func(ctx context.Context, out chan<- runner.Item) error {
		return jl.ReadItems(ctx, s.input.R, s.readOpts, out)
	}, total.setOnce)
	if ios.IsStdinTTY() && s.input.R == ios.In {
		fmt.Fprintln(errOut, "pace: reading items from the terminal, one per line; end with Ctrl-D")
	}

	var wg sync.WaitGroup
	runDone := make(chan struct{})
	if (disp.shows() || tr != nil) && s.input.Countable() {
		wg.Go(func() { // count a regular file's or ::: items for the total, the ETA and the learner
			if n := jl.ToRun(s.input.Count(readCtx, s.readOpts)); n >= 0 {
				total.setOnce(n)
			}
		})
	}
	var learnedRules func() []throttle.Rule
	if tr != nil {
		learnedRules = func() []throttle.Rule { rules, _ := tr.Learned(); return rules }
	}
	// The display plans with the -j the pool really runs (capped by the
	// open-file limit), not the one asked for.
	wg.Go(func() { disp.follow(runDone, backend, rec.tally, total, o.allRules(), jobs, learnedRules) })

	start := time.Now()
	facts.limitErr = pool.Run(jobCtx, feed.In)
	facts.elapsed = time.Since(start)
	close(runDone)
	cancelRead()
	wg.Wait()
	disp.close()

	// The reader may still be blocked reading a pipe or terminal; it
	// cannot be interrupted, and the process is about to exit anyway.
	if got, ok := feed.Result(); ok {
		facts.read, facts.readAll = got.N, got.All
		if !errors.Is(got.Err, context.Canceled) {
			facts.readErr = got.Err
		}
	} else {
		facts.read = -1
	}
	facts.tally = rec.tally.Snapshot()
	facts.stats = backend.Stats()
	facts.skipped = jl.Skipped()
	facts.total = total.get()
	if facts.total < 0 && !facts.readAll && s.input.Countable() {
		// Stopped early: the items never read are not started either.
		cctx, cancel := context.WithTimeout(context.Background(), maxCountTime)
		facts.total = jl.ToRun(s.input.Count(cctx, s.readOpts))
		cancel()
	}
	if sig := sigs.Signal(); sig != nil {
		facts.signal = interrupt.Name(sig)
	}
	facts.pipe = rec.out.Closed()
	facts.unlogged, facts.jobLogErr, facts.outputErr, facts.serverStop = rec.failures()
	if tr != nil {
		_, l := tr.Learned()
		facts.learned = &l
	}
	facts.halted = rec.haltedBy()
	var long *learn.PolicyWaitTooLong
	switch {
	case errors.As(facts.limitErr, &long):
		fmt.Fprintf(ios.ErrOut, "pace: the server publishes %s (%s): the next call would wait %s, longer than --max-server-pause %s; stopping (a longer --max-server-pause waits)\n",
			long.Rule, long.Header, human.ETA(long.Wait), long.Max)
	case facts.limitErr != nil:
		ios.sayf("limiter failed: %s", userMessage(facts.limitErr))
	}
	if facts.readErr != nil {
		ios.sayf("%s: %s", s.input.Name, userMessage(facts.readErr))
	}
	rec.reportUnlogged(ios.ErrOut)
	return facts
}

// maxCountTime bounds counting the items of a run stopped early, for its
// summary's not_started; past it, the count is a lower bound.
const maxCountTime = 3 * time.Second

// backendExitCode is the exit code for a backend that failed with err: 2
// for rules that differ from those of the processes sharing the quota
// (a *throttle.MismatchError), 3 when its store failed (throttle.ErrBackend),
// else otherwise.
func backendExitCode(err error, otherwise int) int {
	switch {
	case errors.As(err, new(*throttle.MismatchError)):
		return ExitUsage
	case errors.Is(err, throttle.ErrBackend):
		return ExitBackend
	}
	return otherwise
}

// reportf prints "pace: message" on stderr (sayf: credentials hidden)
// and returns the exit error.
func reportf(ios *IOStreams, code int, format string, args ...any) error {
	ios.sayf(format, args...)
	return &ExitError{Code: code}
}

// stoppedf is reportf for a command that sig stopped: its exit code
// (128 + its number), and death by it where pace dies of it (dieOf), as
// a run's does.
func stoppedf(ios *IOStreams, sig os.Signal, format string, args ...any) error {
	ios.sayf(format, args...)
	return &ExitError{Code: signalExitCode(sig), Signal: dieOf(sig)}
}
