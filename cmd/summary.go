package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/internal/interrupt"
	"github.com/pace-cli/pace/internal/outfile"
	"github.com/pace-cli/pace/internal/resume"
	"github.com/pace-cli/pace/internal/summary"
	"github.com/pace-cli/pace/throttle/learn"
)

// ProxySummary is pace proxy's part of a Summary (package summary).
type ProxySummary = summary.Proxy

// summarize turns what happened during a run into its summary and exit
// code. It reads nothing but f.
func summarize(f *runFacts) (*summary.Summary, int) {
	t := f.tally
	s := summary.New(summary.Facts{Tally: t, Stats: f.stats, Learned: f.learned, Elapsed: f.elapsed, Jobs: f.jobs,
		Skipped: f.skipped, Total: f.total, Read: f.read, ReadAll: f.readAll, MarginFixed: f.opts.MarginSet, Signal: f.signal})
	if f.jobLogErr == nil && t.Attempts > 0 {
		s.JobLog = f.opts.JobLog
	}
	s.Proxy = f.proxy
	code := ExitOK
	switch {
	case f.command != nil:
		code = *f.command // pace proxy -- CMD exits with CMD's status
		if f.signal != "" {
			s.Interrupted = f.signal
		}
		if f.jobLogErr != nil {
			// The proxy stopped while CMD ran, and requests it sent
			// have no row: CMD's 0 does not make that a success.
			s.Stopped = "the job log could not be written"
			if code == ExitOK {
				code = ExitFailed
			}
		}
	case errors.As(f.limitErr, new(*learn.PolicyWaitTooLong)):
		// Not the store's failure: every item left would wait as long.
		code = ExitFailed
		s.Stopped = "the server's published rule would hold the next call longer than --max-server-pause"
	case f.limitErr != nil:
		code = backendExitCode(f.limitErr, ExitBackend)
		s.Stopped = "the limiter failed"
	case f.signal != "":
		code = signalNameExitCode(f.signal)
	case f.pipe:
		s.Interrupted = "SIGPIPE"
		code = ExitBrokenPipe
	case f.halted != nil:
		code = f.halted.ExitCode(t.Failed)
		s.Stopped = fmt.Sprintf("--halt %s after job %d", f.halted.Spec, f.halted.Seq)
	case f.readErr != nil:
		code = ExitFailed
		if t.Attempts == 0 && t.Failed == 0 {
			code = ExitUsage
		}
		if errors.Is(f.readErr, resume.ErrInputChanged) || errors.Is(f.readErr, resume.ErrTooFarAhead) {
			code = ExitUsage
		}
		s.Stopped = "the input could not be read"
	case f.jobLogErr != nil:
		code = ExitFailed
		s.Stopped = "the job log could not be written"
	case f.outputErr != nil:
		code = ExitFailed
		s.Stopped = "job output could not be written"
	case f.serverStop != nil:
		code = ExitFailed
		s.Stopped = "the server asked for a pause longer than --max-server-pause"
	case t.Failed > 0:
		code = ExitFailed
	}
	s.ExitCode = code
	return s, code
}

// writeSummary writes s to w in the form --summary names.
func writeSummary(w io.Writer, form string, s *summary.Summary) error {
	switch form {
	case summaryText:
		return s.WriteText(w)
	case summaryJSON:
		return s.WriteJSON(w)
	}
	return nil
}

// writeSummaryFile writes s as JSON to the file name as package outfile
// writes: a regular file whole (into a temporary file beside it, renamed
// over it once written), a FIFO or a device straight. ctx bounds the wait
// for a FIFO's reader.
func writeSummaryFile(ctx context.Context, name string, s *summary.Summary) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("--summary-file: %w", err)
	}
	if err := outfile.WriteFile(ctx, name, append(b, '\n')); err != nil {
		return fmt.Errorf("--summary-file %w", err)
	}
	return nil
}

// plural returns word, with an s unless n is 1 (human.Plural).
func plural(n int, word string) string { return human.Plural(n, word) }

// roundDuration rounds d for display (human.Duration).
func roundDuration(d time.Duration) time.Duration { return human.Duration(d) }

// dieOf returns the signal pace should die of rather than exit with
// code, summarize's (ExitError.Signal): SIGINT when it stopped the run
// and gave the code, so that a shell's loop of runs stops at Ctrl-C as it
// does for any command; nil when the code is the limiter's. pace proxy
// -- CMD dies of SIGINT when that gave its status (commandSignal): CMD
// killed by it, as pace exec does, since Ctrl-C reaches CMD and pace
// alike; not for CMD's own exit status 130.
func (f *runFacts) dieOf(code int) os.Signal {
	if f.command != nil {
		if *f.command == code && code == ExitInterrupted {
			return dieOf(f.commandSignal)
		}
		return nil
	}
	if f.limitErr != nil || f.signal != interrupt.Name(os.Interrupt) || code != ExitInterrupted {
		return nil
	}
	return os.Interrupt
}
