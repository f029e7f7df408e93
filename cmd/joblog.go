package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/internal/regfile"
	"github.com/pace-cli/pace/internal/resume"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// JobLogOptions are the flags of pace run and pace fetch that keep a job
// log and resume from one.
type JobLogOptions struct {
	// JobLog is the job log file; empty means none.
	JobLog string
	// Resume skips the items that have a row in the job log.
	Resume bool
	// ResumeFailed skips the items whose last row succeeded.
	ResumeFailed bool
}

// jobLogHelp is the job log part of pace run's and pace fetch's --help.
const jobLogHelp = `Job log:
  --joblog FILE appends one row per attempt, retries included, in GNU
  parallel's --joblog format (TAB-separated: Seq Host Starttime
  JobRuntime Send Receive Exitval Signal Command), written and flushed
  as each attempt ends. Starttime is the instant the rules admitted the
  attempt. A job killed by pace (--timeout, a second Ctrl-C) has
  Exitval -1 and the signal in Signal. For pace fetch, Command is
  "METHOD URL" (credentials redacted), Exitval is 0 for a 2xx, the HTTP
  status for any other response, and -1 when no whole response came
  (network error, timeout, interrupt); Receive counts body bytes.

  The rules hold across runs that share a job log: before admitting
  anything pace counts the log's admissions that are still inside each
  rule's window, so -r 10000/day holds over restarts. (With --redis the
  quota lives in Redis and the log is not consulted for it.)

  --resume skips the items that have a row in the job log; --resume-failed
  skips only those whose last row succeeded and runs the failed ones
  again. Items are matched by Seq, their position in the input, so the
  input and command must be the ones the log was written with: an item
  whose command differs from its row is refused (exit 2) before anything
  runs. Check a log with "pace audit".`

// addJobLogFlags binds --joblog, --resume and --resume-failed to o.
func addJobLogFlags(cmd *cobra.Command, o *JobLogOptions) {
	fl := cmd.Flags()
	fl.StringVar(&o.JobLog, "joblog", "",
		"append a row per attempt to `FILE` (GNU parallel's format); earlier rows count against the rules")
	fl.BoolVar(&o.Resume, "resume", false, "skip the items that have a row in --joblog")
	fl.BoolVar(&o.ResumeFailed, "resume-failed", false, "skip the items whose last row in --joblog succeeded; run failed ones again")
}

// check validates the job log flags.
func (o *JobLogOptions) check() error {
	switch {
	case o.Resume && o.ResumeFailed:
		return flagErrorf("--resume and --resume-failed cannot be used together")
	case (o.Resume || o.ResumeFailed) && o.JobLog == "":
		flag := "--resume"
		if o.ResumeFailed {
			flag = "--resume-failed"
		}
		return flagErrorf("%s needs --joblog FILE", flag)
	}
	return nil
}

// jobLog is a run's job log: the rows earlier runs wrote, read for
// resuming and for the rules, and the writer of this run's rows. A nil
// *jobLog is a run without one; its methods do nothing. record is safe
// for concurrent use.
type jobLog struct {
	path    string
	w       *joblog.Writer
	earlier *joblog.Log
	resume  *resume.State
	// command returns a row's Command column.
	command func(*runner.Job) string
	// cost says whether rows record the call's cost (in Send).
	cost bool
}

// jobLogCommand is the Command column of pace run's rows: the command
// line, quoted for a shell, with its credentials hidden (shownCommand).
func jobLogCommand(j *runner.Job) string { return shownCommand(j) }

// fetchJobLogCommand is the Command column of pace fetch's rows: "METHOD
// URL", the URL with its credentials redacted (Argv as the fetch
// executor prepares it).
func fetchJobLogCommand(j *runner.Job) string { return strings.Join(j.Argv, " ") }

// openJobLog reads the job log o names, if it exists, and opens it for
// appending, with rules in its header if it is new. command makes a row's
// Command column (nil: the command line); prepare is the executor's, used
// to check a resumed input. It returns nil without --joblog. Its errors
// are input errors: the log cannot be read, is not a regular file, or has
// a malformed row (quoted).
func openJobLog(o *JobLogOptions, rules []throttle.Rule, prepare func(*runner.Job) error, command func(*runner.Job) string) (*jobLog, error) {
	j, err := loadJobLog(o, prepare, command)
	if j == nil || err != nil {
		return nil, err
	}
	if j.w, err = joblog.Open(o.JobLog, rules); errors.Is(err, regfile.ErrNotRegular) {
		return nil, notRegularJobLog(err) // swapped in since it was read
	} else if err != nil {
		return nil, err
	}
	j.cost = slices.ContainsFunc(rules, func(r throttle.Rule) bool { return r.Cost })
	return j, nil
}

// loadJobLog reads the earlier rows of --joblog and sets up --resume, but
// does not open the log for writing: --dry-run uses it to show what a
// resumed run would do. It returns nil without --joblog.
func loadJobLog(o *JobLogOptions, prepare func(*runner.Job) error, command func(*runner.Job) string) (*jobLog, error) {
	if o.JobLog == "" {
		return nil, nil
	}
	if command == nil {
		command = jobLogCommand
	}
	j := &jobLog{path: o.JobLog, command: command, earlier: &joblog.Log{}}
	f, err := regfile.Open(o.JobLog, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, regfile.ErrNotRegular):
		return nil, notRegularJobLog(err)
	case err != nil:
		return nil, fmt.Errorf("job log: %w", err)
	default:
		defer f.Close()
		j.earlier, err = joblog.Read(f)
		if err != nil {
			return nil, fmt.Errorf("job log %s: %w", o.JobLog, err)
		}
	}
	if o.Resume || o.ResumeFailed {
		for i := range j.earlier.Entries {
			j.earlier.Entries[i].Command = redactLogged(j.earlier.Entries[i].Command)
		}
		mode := resume.All
		if o.ResumeFailed {
			mode = resume.Failed
		}
		j.resume = resume.New(j.earlier.Entries, resume.Options{Mode: mode, Command: func(job *runner.Job) (string, error) {
			if err := prepare(job); err != nil {
				return "", err
			}
			return command(job), nil
		}})
	}
	return j, nil
}

// notRegularJobLog is the error for a job log path that is not a regular
// file (a *regfile.NotRegularError in err): "job log f is a FIFO, not a
// regular file: ...".
func notRegularJobLog(err error) error {
	var nr *regfile.NotRegularError
	if !errors.As(err, &nr) {
		return err
	}
	return fmt.Errorf("job log %w: pace reads and appends to a file of its own", nr)
}

// seed gives b the admissions of earlier runs, so that the rules hold
// across runs sharing the log. It must come before the first admission.
// It returns how many earlier admissions fall inside the longest window
// of rules, ending at now.
func (j *jobLog) seed(b throttle.Backend, rules []throttle.Rule, now time.Time) (int, error) {
	if j == nil || len(j.earlier.Entries) == 0 {
		return 0, nil
	}
	if err := b.Seed(j.earlier.Calls()); err != nil {
		return 0, fmt.Errorf("job log %s: count earlier calls: %w", j.path, err)
	}
	return j.earlier.Within(rules, now), nil
}

// earlierCalls returns the admissions of the earlier runs in the job
// log, if any.
func (j *jobLog) earlierCalls() []throttle.Call {
	if j == nil {
		return nil
	}
	return j.earlier.Calls()
}

// announce says on w what a resumed run skips, and with verbose how many
// earlier calls still count against the rules.
func (j *jobLog) announce(w io.Writer, recent int, verbose bool) {
	if j == nil {
		return
	}
	if j.resume != nil {
		seqs := make(map[int]bool, len(j.earlier.Entries))
		for _, e := range j.earlier.Entries {
			seqs[e.Seq] = true
		}
		skip := j.resume.Skipping(-1)
		if again := int64(len(seqs)) - skip; again > 0 {
			fmt.Fprintf(w, "pace: resuming from %s: skipping %d %s that succeeded, running %d failed %s again\n",
				j.path, skip, plural(int(skip), "item"), again, plural(int(again), "one"))
		} else {
			fmt.Fprintf(w, "pace: resuming from %s: skipping %d %s already run\n", j.path, skip, plural(int(skip), "item"))
		}
	}
	if verbose && recent > 0 {
		fmt.Fprintf(w, "pace: job log %s: %d earlier calls still count against the rules\n", j.path, recent)
	}
}

// readItems reads the items of r as items.Read does; when resuming it
// also marks those to skip and refuses an input that is not the one the
// log was written for (a *resume.InputChangedError) before sending
// anything.
func (j *jobLog) readItems(ctx context.Context, r io.Reader, opts items.ReadOptions, out chan<- runner.Item) error {
	if j == nil || j.resume == nil {
		return items.Read(ctx, r, opts, out)
	}
	return j.resume.ReadItems(ctx, r, opts, out)
}

// skipped returns how many items the resume has skipped so far.
func (j *jobLog) skipped() int64 {
	if j == nil || j.resume == nil {
		return 0
	}
	return j.resume.Skipped()
}

// toRun returns how many of an input's n items will run: n less those a
// resumed run skips. It returns n when n < 0 (unknown).
func (j *jobLog) toRun(n int64) int64 {
	if j == nil || j.resume == nil || n < 0 {
		return n
	}
	return n - j.resume.Skipping(n)
}

// record appends r's row.
func (j *jobLog) record(r *runner.Result) error {
	if j == nil {
		return nil
	}
	return j.w.Write(joblog.EntryOf(r, j.command(&r.Job), j.cost))
}

// close closes the job log, reporting a failure to flush it.
func (j *jobLog) close() error {
	if j == nil {
		return nil
	}
	return j.w.Close()
}
