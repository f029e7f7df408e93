package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pace-cli/pace/internal/adapt"
	"github.com/pace-cli/pace/internal/halt"
	"github.com/pace-cli/pace/internal/jobout"
	"github.com/pace-cli/pace/internal/redact"
	"github.com/pace-cli/pace/internal/runlog"
	"github.com/pace-cli/pace/internal/summary"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/pacehttp"
)

// recorder handles what the pool reports: it counts (tally), prints each
// item's output, writes job log rows, logs with --verbose, and stops
// admissions when a row or an output cannot be written. The pool calls
// onEvent from one goroutine at a time; failures may be read from others.
//
// A final attempt's row is written once its output has been printed, so
// that a row means the item is done: a job whose output could not be
// written has a row that says it failed, and an item whose output was
// never printed (pace killed first) has no row and runs again on resume.
type recorder struct {
	s      *session
	jl     *runlog.Log
	disp   *display
	errOut io.Writer
	stop   func() // stop admissions
	kill   func() // kill the running jobs
	tally  *summary.Tally
	out    *jobout.Output
	log    *slog.Logger // nil without --verbose
	// margin adapts the backend's margin to the lags measured; nil when
	// --margin fixed it.
	margin *adapt.Margin

	stalledOnce sync.Once // says once that output was given up
	// outWithErr: job output goes where stderr goes (print).
	outWithErr bool

	mu        sync.Mutex
	halted    *halt.Halted
	jobLogErr error
	outputErr error
	// serverStop: a job's server asked for a pause past --max-server-pause.
	serverStop error
	unlogged   []int64 // items that ran but have no row, after jobLogErr
}

func newRecorder(s *session, b throttle.Backend, jl *runlog.Log, disp *display, errOut io.Writer, stop func()) *recorder {
	r := &recorder{s: s, jl: jl, disp: disp, errOut: errOut, stop: stop, tally: summary.NewTally(s.opts.allRules())}
	if !s.opts.MarginSet && !s.proxy && len(s.opts.allRules()) > 0 {
		r.margin = adapt.New(b, s.opts.Margin, s.opts.marginLeast, s.opts.allRules())
	}
	w := s.out
	if w == nil {
		w = s.f.IOStreams.Out
	}
	r.out = jobout.New(w, func() {}, isTerminal)
	r.outWithErr = (s.out == nil && disp.outOnScreen) || sameFile(w, s.f.IOStreams.ErrOut)
	if s.opts.Verbose {
		r.log = newLogger(errOut)
	}
	return r
}

// onEvent handles one event of the pool.
func (r *recorder) onEvent(ev runner.Event) {
	r.tally.Observe(ev)
	if r.margin != nil {
		if m, lag, moved := r.margin.Observe(ev); moved && r.log != nil {
			r.log.Info("margin", "now", m.Round(time.Millisecond), "lag", lag.Round(time.Microsecond))
		}
	}
	switch ev.Kind {
	case runner.JobStarted:
		if r.log != nil {
			a := ev.Admission
			r.log.Info("job started", "seq", ev.Job.Seq, "attempt", ev.Job.Attempt, "slot", ev.Job.Slot,
				"waited", a.Waited.Round(time.Microsecond), "cmd", shownCommand(&ev.Job))
		}
	case runner.JobNotStarted:
		if r.log != nil {
			r.log.Warn("job could not start; trying again", "seq", ev.Job.Seq, "error", shownStatus(r.s.f.IOStreams.secrets, &ev.Result.Job, ev.Result.Status()))
		}
	case runner.JobFinished:
		if r.log != nil {
			res := ev.Result
			level := slog.LevelInfo
			if !res.OK() {
				level = slog.LevelWarn
			}
			r.log.Log(context.Background(), level, "job finished", "seq", res.Job.Seq, "attempt", res.Job.Attempt,
				"status", shownStatus(r.s.f.IOStreams.secrets, &res.Job, res.Status()), "duration", res.Runtime.Round(time.Microsecond), "retry", ev.Retry)
		}
		if errors.Is(ev.Result.Err, runner.ErrOutput) {
			// Its body could not be kept (a full disk under -o DIR/):
			// stop now, before another call spends quota in vain. The
			// job's own failure line says why.
			r.stopFor(&r.outputErr, ev.Result.Err, fmt.Sprintf("job %d's output could not be written", ev.Job.Seq))
		}
		if errors.As(ev.Result.Err, new(*pacehttp.PauseTooLong)) {
			// The server's "stop": every later call would be refused alike.
			r.stopFor(&r.serverStop, ev.Result.Err, fmt.Sprintf("the server asked for a pause longer than --max-server-pause (job %d; a longer --max-server-pause waits)", ev.Job.Seq))
		}
		if ev.Retry {
			r.record(ev.Result) // an attempt that is not the last: its output goes nowhere
		}
	case runner.JobDone:
		res := ev.Result
		outErr := r.print(res)
		if errors.Is(outErr, jobout.ErrStalled) {
			r.stalledOnce.Do(func() {
				fmt.Fprintf(r.errOut, "pace: stdout is not being read: giving up on job output; the jobs whose output is not written fail\n")
			})
		} else if outErr != nil && !errors.Is(outErr, jobout.ErrGone) {
			r.stopFor(&r.outputErr, outErr, fmt.Sprintf("writing job output failed (%v)", outErr))
		}
		r.tally.Done(res, func(res *runner.Result) summary.FailedItem {
			return summary.FailedItem{Seq: res.Job.Seq, Item: shownItem(&res.Job, r.s.show(&res.Job)), Status: shownStatus(r.s.f.IOStreams.secrets, &res.Job, res.Status())}
		})
		if !ev.RetryDropped { // else its row was written when it finished
			r.record(res)
		}
		r.disp.add(1)
		if r.s.opts.Halt.Observe(res) {
			r.halt(res)
		}
	}
}

// print prints res's output, and a line on stderr if it failed; it
// returns the error of writing stdout, else that of writing the job's
// stderr, after which res has failed.
//
// Job output goes through the display, which keeps track of what reaches
// the screen, so that the bar never covers it. Output to where stderr
// does not go (a pipe, a file, pace fetch -o /dev/null) is written
// without the display's lock, which a stalled reader would hold for as
// long as it stalls (messages on stderr, interrupts' included, would wait
// for it); the job's stderr then follows under the lock. Output to where
// stderr goes too (a terminal, > log 2>&1) is written under the lock, so
// that no line of pace's cuts into it.
func (r *recorder) print(res *runner.Result) error {
	var outErr error
	finish := func(errOut io.Writer) {
		if outErr != nil && res.Err == nil {
			// The job ran, but its output is lost: it failed, and a body
			// that went nowhere was not kept (the job log's Receive,
			// the summary's bytes).
			res.Err = fmt.Errorf("job %d: output could not be written: %w", res.Job.Seq, outErr)
			if res.HTTP != nil && res.HTTP.File == "" {
				r.tally.NotKept(res.HTTP.Bytes)
				res.HTTP.Bytes = 0
			}
		}
		if !res.OK() && !errors.Is(outErr, jobout.ErrGone) && !errors.Is(outErr, jobout.ErrStalled) && !r.s.proxy {
			r.disp.lineLocked()
			reportFailure(errOut, r.s.f.IOStreams.secrets, res)
		}
	}
	ios := r.s.f.IOStreams
	if r.outWithErr {
		r.disp.write(func() {
			errOut := r.disp.screen(ios.ErrOut, false)
			r.out.Begin()
			outErr = r.cut(r.s.print(r.disp.screen(r.out, true), errOut, res))
			finish(errOut)
		})
		return outErr
	}
	var jobErr bytes.Buffer
	r.out.Begin()
	outErr = r.s.print(r.out, &jobErr, res)
	r.disp.write(func() {
		errOut := r.disp.screen(ios.ErrOut, false)
		// A stderr not written fails it too, and cuts its stdout.
		if _, err := jobErr.WriteTo(errOut); err != nil && outErr == nil {
			outErr = err
		}
		outErr = r.cut(outErr)
		finish(errOut)
	})
	return outErr
}

// cut cuts the output of the job being printed off stdout again when
// printing it failed with err (see output.cut), and returns err, saying
// why a part of it stays if one does.
func (r *recorder) cut(err error) error {
	if err == nil {
		return nil
	}
	// A torn last line would read as data, and its row says it failed.
	if cerr := r.out.Cut(); cerr != nil {
		return fmt.Errorf("%w (its part written stays: %v)", err, cerr)
	}
	return err
}

// record writes res's row. The first failure to write one stops
// admissions and is reported once; every later item that ran is noted as
// having no row.
func (r *recorder) record(res *runner.Result) {
	if res.Start.IsZero() {
		return // never admitted: no quota spent, no row
	}
	err := r.jl.Record(res)
	if err == nil {
		return
	}
	r.mu.Lock()
	first := r.jobLogErr == nil
	if first {
		r.jobLogErr = err
	}
	r.unlogged = append(r.unlogged, res.Job.Seq)
	r.mu.Unlock()
	if first {
		fmt.Fprintf(r.errOut, "pace: %s: starting no more jobs; the running ones finish\n", r.s.f.IOStreams.shown(err.Error()))
		r.stop()
	}
}

// halt stops the run as --halt says, once, because of res.
func (r *recorder) halt(res *runner.Result) {
	r.mu.Lock()
	first := r.halted == nil
	if first {
		r.halted = r.s.opts.Halt.HaltedBy(res)
	}
	h := r.halted
	r.mu.Unlock()
	if !first {
		return
	}
	if h.Now {
		n := r.tally.InFlight()
		fmt.Fprintf(r.errOut, "pace: --halt %s: job %d ended it; killing %d running %s\n", h.Spec, h.Seq, n, plural(n, "job"))
		r.stop()
		r.kill()
		return
	}
	fmt.Fprintf(r.errOut, "pace: --halt %s: job %d ended it; starting no more jobs, the running ones finish\n", h.Spec, h.Seq)
	r.stop()
}

// stopFor stops admissions after the first job whose output could not be
// written (a full disk under stdout or under -o DIR/), or whose server
// asked to stop, keeping the first err in *dst: every later job would
// fail alike. what says so for the user.
func (r *recorder) stopFor(dst *error, err error, what string) {
	r.mu.Lock()
	first := *dst == nil
	if first {
		*dst = err
	}
	r.mu.Unlock()
	if first {
		fmt.Fprintf(r.errOut, "pace: %s: starting no more jobs; the running ones finish\n", what)
		r.stop()
	}
}

// failures returns the items that ran but have no row, and the first job
// log and output failures.
func (r *recorder) failures() (unlogged []int64, jobLogErr, outputErr, serverStop error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.unlogged), r.jobLogErr, r.outputErr, r.serverStop
}

// haltedBy returns what halted the run, if --halt did.
func (r *recorder) haltedBy() *halt.Halted {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.halted
}

// reportUnlogged names the items that ran but have no row in the job log,
// which a resumed run would run again (a proxy's requests, which have no
// resume).
func (r *recorder) reportUnlogged(w io.Writer) {
	seqs, _, _, _ := r.failures()
	if len(seqs) == 0 {
		return
	}
	slices.Sort(seqs)
	seqs = slices.Compact(seqs)
	const show = 20
	parts := make([]string, 0, show)
	for _, s := range seqs[:min(len(seqs), show)] {
		parts = append(parts, fmt.Sprint(s))
	}
	more := ""
	if len(seqs) > show {
		more = fmt.Sprintf(" and %d more", len(seqs)-show)
	}
	what, again := plural(len(seqs), "item")+" that ran", "; a --resume would run them again"
	if r.s.proxy {
		// A proxy's requests are its clients' to send again: it has no
		// --resume.
		what, again = plural(len(seqs), "request")+" sent upstream", ""
	}
	fmt.Fprintf(w, "pace: job log %s has no row for %d %s: %s%s%s\n",
		r.s.f.IOStreams.shown(r.jl.Path()), len(seqs), what, strings.Join(parts, " "), more, again)
}

// reportFailure prints one line about an item that failed for good.
func reportFailure(w io.Writer, base *redact.Redactor, r *runner.Result) {
	if r.Err != nil {
		fmt.Fprintf(w, "pace: %s\n", shownStatus(base, &r.Job, userMessage(r.Err)))
		return
	}
	fmt.Fprintf(w, "pace: job %d failed (%s): %s\n", r.Job.Seq, shownStatus(base, &r.Job, r.Status()), shownCommand(&r.Job))
}
