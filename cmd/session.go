package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// session is one run of a pool over the items of an input with the
// common options: limiter, progress bar, verbose log, interrupts, summary
// and exit code. pace run and pace fetch differ only in the executor and
// in how a result is printed.
type session struct {
	f    *Factory
	opts *CommonOptions
	// executor prepares and runs each job.
	executor runner.Executor
	// input and readOpts say where the items come from.
	input    *input
	readOpts runner.ReadOptions
	// printResult prints an item's final result; out and errOut already
	// keep clear of the progress bar.
	printResult func(out, errOut io.Writer, r *runner.Result)
	// extendSummary, if set, adds to the summary before it is written.
	extendSummary func(*Summary)
	// logCommand, if set, makes the job log's Command column; nil means
	// the command line.
	logCommand func(*runner.Job) string
}

// run runs the session and returns nil or an *ExitError with the exit
// code; everything has been reported by then.
func (s *session) run(ctx context.Context) error {
	ios, o, clock := s.f.IOStreams, s.opts, s.f.Clock
	lim, err := s.limiter()
	if err != nil {
		code := ExitUsage
		if errors.Is(err, throttle.ErrBackend) {
			code = ExitBackend
		}
		return reportf(ios, code, "%v", err)
	}
	defer stopLimiter(lim)

	disp := &display{}
	// A Redis limiter checks the rules stored in Redis before anything
	// runs, and reports Redis outages from then on (redis.go).
	if err := startLimiter(ctx, lim, displayWriter{disp, ios.ErrOut}, s.f.Signals); err != nil {
		return reportf(ios, limiterExitCode(err, ExitBackend), "%v", err)
	}
	if o.Progress == progressAlways || o.Progress == progressAuto && ios.IsStderrTTY() {
		disp.bar = newBar(ios.ErrOut, -1)
	}
	defer disp.close()
	errOut := displayWriter{disp, ios.ErrOut}

	// The job log: earlier rows count against the rules (joblog.go).
	jl, err := openJobLog(&o.JobLogOptions, s.executor.Prepare, s.logCommand)
	if err != nil {
		return reportf(ios, ExitUsage, "%v", err)
	}
	defer jl.close()
	recent, err := jl.seed(lim, o.Rules, clock.Now())
	if err != nil {
		return reportf(ios, ExitUsage, "%v", err)
	}
	jl.announce(errOut, recent, o.Verbose)

	var log *slog.Logger
	var limiter runner.Limiter = lim
	if o.Verbose {
		log = newLogger(errOut)
		limiter = &loggingLimiter{Limiter: lim, log: log, clock: clock}
	}

	t := &tally{}
	etas := newETAEstimator(o.Rules)
	var total atomic.Int64
	total.Store(-1)
	// stdout may close under us (| head): then stop like a second
	// interrupt. The write that finds out holds the display's lock, so
	// the stopping happens on its own goroutine.
	var onBroken func()
	var brokenDone sync.WaitGroup
	stdout := &pipeWatch{w: ios.Out, broken: func() { brokenDone.Go(onBroken) }}
	onEvent := func(ev runner.Event) {
		t.observe(ev)
		switch ev.Kind {
		case runner.JobStarted:
			etas.admitted(ev.Admitted)
			if log != nil {
				log.Info("job started", "seq", ev.Job.Seq, "attempt", ev.Job.Attempt, "slot", ev.Job.Slot,
					"waited", ev.Waited.Round(time.Microsecond), "cmd", ev.Job.CommandLine())
			}
		case runner.JobFinished:
			jl.record(ev.Result, errOut)
			if log != nil {
				r := ev.Result
				level := slog.LevelInfo
				if !r.OK() {
					level = slog.LevelWarn
				}
				log.Log(context.Background(), level, "job finished", "seq", r.Job.Seq, "attempt", r.Job.Attempt,
					"status", r.Status(), "duration", r.Runtime.Round(time.Microsecond), "retry", ev.Retry)
			}
		case runner.JobDone:
			disp.write(func() {
				s.printResult(stdout, ios.ErrOut, ev.Result)
				if !ev.Result.OK() {
					reportFailure(ios.ErrOut, ev.Result)
				}
			})
			disp.add(1)
		}
	}
	pool, err := runner.NewPool(runner.Options{
		Jobs: o.Jobs, Limiter: limiter, Executor: s.executor, Retries: o.Retries,
		KeepOrder: o.KeepOrder, Clock: clock, OnEvent: onEvent,
	})
	if err != nil {
		return reportf(ios, ExitUsage, "%v", err)
	}

	jobCtx, cancelJobs := context.WithCancelCause(ctx)
	defer cancelJobs(nil)
	readCtx, cancelRead := context.WithCancel(jobCtx)
	defer cancelRead()

	// The reader: items as they arrive.
	items := make(chan runner.Item)
	readDone := make(chan struct{})
	var readErr error
	go func() {
		defer close(items)
		defer close(readDone) // first: once items is closed, readErr is known
		readErr = jl.readItems(readCtx, s.input.r, s.readOpts, items)
	}()
	if ios.IsStdinTTY() && s.input.r == ios.In {
		fmt.Fprintln(errOut, "pace: reading items from the terminal, one per line; end with Ctrl-D")
	}

	var wg sync.WaitGroup
	runDone := make(chan struct{})
	if disp.bar != nil && s.input.counter != nil {
		wg.Add(1)
		go func() { // count a regular file's items for the bar's total
			defer wg.Done()
			if n := jl.toRun(s.input.count(readCtx, s.readOpts)); n >= 0 {
				total.Store(n)
				disp.setTotal(n)
			}
		}()
	}

	// Interrupts: the first stops admissions and starts the grace period,
	// the second (or the end of the grace period) kills the jobs.
	var stopping atomic.Bool
	sigs := &interrupts{
		signals: s.f.Signals, clock: clock, grace: o.Grace, out: errOut, running: t.inFlight,
		stop: func() { pool.Stop(); cancelRead(); stopping.Store(true) },
		kill: cancelJobs,
	}
	onBroken = func() {
		fmt.Fprintf(errOut, "pace: stdout closed: starting no more jobs, killing %d running\n", t.inFlight())
		sigs.stop()
		cancelJobs(runner.ErrKillNow)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		sigs.watch(runDone)
	}()

	// The bar's rule usage and ETA.
	if disp.bar != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				timer := clock.NewTimer(refreshEvery)
				select {
				case <-timer.C():
				case <-runDone:
					timer.Stop()
					return
				}
				st := lim.Stats()
				tot := total.Load()
				started, inFlight, mean := t.progress()
				eta := etas.estimate(clock.Now(), tot-started, inFlight, st.Rules, o.Margin, o.Jobs, mean)
				msg := ""
				if stopping.Load() {
					msg = "stopping"
				}
				disp.describe(barText(st, eta, tot >= 0, msg))
			}
		}()
	}

	start := clock.Now()
	runErr := pool.Run(jobCtx, items)
	brokenDone.Wait()
	elapsed := clock.Now().Sub(start)
	close(runDone)
	cancelRead()
	wg.Wait()
	disp.close()

	// The reader may still be blocked reading a pipe or terminal; it
	// cannot be interrupted, and the process is about to exit anyway.
	readFailed := false
	select {
	case <-readDone:
		readFailed = readErr != nil && !errors.Is(readErr, context.Canceled)
	default:
	}

	sum := t.summary(o.Jobs, elapsed)
	sum.Skipped = jl.skipped()
	st := lim.Stats()
	sum.setRules(st)
	if rl, ok := lim.(interface{ RedisStats() throttle.RedisStats }); ok {
		sum.setRedis(o.Redis.GlobalJobs, st, rl.RedisStats())
	}
	if s.extendSummary != nil {
		s.extendSummary(sum)
	}
	code := ExitOK
	switch {
	case runErr != nil:
		fmt.Fprintf(ios.ErrOut, "pace: limiter failed: %v\n", runErr)
		code = limiterExitCode(runErr, ExitBackend) // 2 for rules that differ from the fleet's
	case sigs.first != nil:
		sum.Interrupted = signalName(sigs.first)
		code, _ = sigs.exitCode()
	case stdout.closed():
		sum.Interrupted = "SIGPIPE"
		code = ExitBrokenPipe
	case readFailed:
		fmt.Fprintf(ios.ErrOut, "pace: %s: %v\n", s.input.name, readErr)
		code = ExitFailed
		if sum.Attempts == 0 && sum.Failed == 0 {
			code = ExitUsage
		}
	case sum.Failed > 0:
		code = ExitFailed
	}
	sum.ExitCode = code
	switch o.Summary {
	case summaryText:
		sum.writeText(ios.ErrOut)
	case summaryJSON:
		sum.writeJSON(ios.ErrOut)
	}
	if code != ExitOK {
		return &ExitError{Code: code}
	}
	return nil
}

// limiter returns the session's limiter: the in-memory one unless the
// factory says otherwise.
func (s *session) limiter() (Limiter, error) {
	if s.f.NewLimiter != nil {
		return s.f.NewLimiter(s.opts)
	}
	o := s.opts
	if o.Redis.URL != "" {
		return newRedisLimiter(&o.Redis, o.Rules, o.Margin, o.Verbose, s.f.Clock) // redis.go
	}
	return throttle.New(o.Rules, throttle.WithMaxInFlight(o.Jobs), throttle.WithMargin(o.Margin),
		throttle.WithClock(s.f.Clock))
}

// reportFailure prints one line about an item that failed for good.
func reportFailure(w io.Writer, r *runner.Result) {
	if r.Err != nil {
		fmt.Fprintf(w, "pace: %v\n", r.Err)
		return
	}
	fmt.Fprintf(w, "pace: job %d failed (%s): %s\n", r.Job.Seq, r.Status(), r.Job.CommandLine())
}

// reportf prints "pace: message" on stderr and returns the exit error.
func reportf(ios *IOStreams, code int, format string, args ...any) error {
	fmt.Fprintf(ios.ErrOut, "pace: "+format+"\n", args...)
	return &ExitError{Code: code}
}
