// Package runlog is a run's job log (pace run's and pace fetch's
// --joblog): the rows earlier runs wrote, read for --resume and
// --resume-failed (package resume) and for the rules that hold across runs,
// and the writer of this run's rows (package joblog keeps the file format).
package runlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/internal/regfile"
	"github.com/pace-cli/pace/internal/resume"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// Options say which job log a run keeps and how.
type Options struct {
	// Path is the job log file; empty means none.
	Path string
	// Resume, if not 0, skips the items the log says are done
	// (resume.All for --resume, resume.Failed for --resume-failed).
	Resume resume.Mode
	// Command returns a row's Command column; Prepare is the executor's,
	// which fills in the job it is given (to check a resumed input).
	Command func(*runner.Job) string
	Prepare func(*runner.Job) error
	// Redact returns an earlier row's Command column as Command would
	// write it now (rows written before credentials were redacted hold
	// them); nil leaves the rows as they are.
	Redact func(string) string
}

// Log is a run's job log: the rows earlier runs wrote, read for resuming
// and for the rules, and the writer of this run's rows. A nil *Log is a
// run without one; its methods do nothing. Record is safe for concurrent
// use.
type Log struct {
	path    string
	w       *joblog.Writer
	earlier *joblog.Log
	resume  *resume.State
	command func(*runner.Job) string
	redact  func(string) string
	// cost says whether rows record the call's cost (in Send).
	cost bool
	// cut is the row cut short that the log ended in when it was read
	// (joblog.Log.CutShort), and cutCall its call as Seed counted it.
	cut     *joblog.Partial
	cutCall *throttle.Call
	// future is how many earlier rows Seed found stamped after now, the
	// furthest ahead by ahead; it counted their calls at now.
	future int
	ahead  time.Duration
}

// Open reads the job log o names, if it exists, and opens it for
// appending, with rules in its header if it is new. It returns nil
// without o.Path. Its errors are input errors: the log cannot be read, is
// not a regular file, or has a malformed row (quoted).
func Open(o Options, rules []throttle.Rule) (*Log, error) {
	j, err := Load(o)
	if j == nil || err != nil {
		return nil, err
	}
	if j.w, err = joblog.Open(o.Path, rules); errors.Is(err, regfile.ErrNotRegular) {
		return nil, notRegular(err) // swapped in since it was read
	} else if err != nil {
		return nil, err
	}
	j.cost = slices.ContainsFunc(rules, func(r throttle.Rule) bool { return r.Cost })
	return j, nil
}

// Load reads the earlier rows of the job log and sets up resuming, but
// does not open the log for writing: --dry-run uses it to show what a
// resumed run would do. It returns nil without o.Path.
func Load(o Options) (*Log, error) {
	if o.Path == "" {
		return nil, nil
	}
	j := &Log{path: o.Path, command: o.Command, redact: o.Redact, earlier: &joblog.Log{}}
	f, err := regfile.Open(o.Path, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, regfile.ErrNotRegular):
		return nil, notRegular(err)
	case err != nil:
		return nil, fmt.Errorf("job log: %w", err)
	default:
		defer f.Close()
		j.earlier, err = joblog.Read(f)
		if err != nil {
			return nil, fmt.Errorf("job log %s: %w", o.Path, err)
		}
		j.cut = j.earlier.CutShort
	}
	if o.Resume != 0 {
		if o.Redact != nil {
			for i := range j.earlier.Entries {
				j.earlier.Entries[i].Command = o.Redact(j.earlier.Entries[i].Command)
			}
		}
		j.resume = resume.New(j.earlier.Entries, resume.Options{Mode: o.Resume, Command: func(job *runner.Job) (string, error) {
			if err := o.Prepare(job); err != nil {
				return "", err
			}
			return o.Command(job), nil
		}})
	}
	return j, nil
}

// notRegular is the error for a job log path that is not a regular file
// (a *regfile.NotRegularError in err): "job log f is a FIFO, not a
// regular file: ...".
func notRegular(err error) error {
	var nr *regfile.NotRegularError
	if !errors.As(err, &nr) {
		return err
	}
	return fmt.Errorf("job log %w: pace reads and appends to a file of its own", nr)
}

// Path returns the job log's file name.
func (j *Log) Path() string { return j.path }

// Seed gives b the admissions of earlier runs, so that the rules hold
// across runs sharing the log. It must come before the first admission.
// It returns how many earlier admissions fall inside the longest window
// of rules, ending at now.
//
// The call of a row cut short at the end of the log (a pace killed as it
// wrote it) was made, and counts too, as late and as costly as it can
// have been (joblog.Partial.Call): at its Starttime, or at now if the row
// lacks it, and of its cost, or of one that fills every cost rule.
func (j *Log) Seed(b throttle.Backend, rules []throttle.Rule, now time.Time) (int, error) {
	if j == nil {
		return 0, nil
	}
	// A row stamped after now (a clock set back since, another host's
	// clock) records a call made before now: it counts from now, the
	// latest it can have come, as the limiter counts it, and so for the
	// progress's ETA (EarlierCalls), which waited for its stamp.
	for i := range j.earlier.Entries {
		if e := &j.earlier.Entries[i]; e.Start.After(now) {
			j.future, j.ahead = j.future+1, max(j.ahead, e.Start.Sub(now))
			e.Start = now
		}
	}
	if j.cut != nil {
		c := j.cut.Call(now)
		if c.At.After(now) {
			j.future, j.ahead = j.future+1, max(j.ahead, c.At.Sub(now))
			c.At = now
		}
		j.cutCall = &c
	}
	calls := j.EarlierCalls()
	if len(calls) == 0 {
		return 0, nil
	}
	if err := b.Seed(calls); err != nil {
		return 0, fmt.Errorf("job log %s: count earlier calls: %w", j.path, err)
	}
	recent := j.earlier.Within(rules, now)
	if c := j.cutCall; c != nil && c.At.After(now.Add(-longest(rules))) {
		recent++
	}
	return recent, nil
}

// longest returns the longest window of rules.
func longest(rules []throttle.Rule) time.Duration {
	var w time.Duration
	for _, r := range rules {
		w = max(w, r.Window)
	}
	return w
}

// EarlierCalls returns the admissions of the earlier runs in the log,
// with the call of a row cut short once Seed has counted it.
func (j *Log) EarlierCalls() []throttle.Call {
	if j == nil {
		return nil
	}
	calls := j.earlier.Calls()
	if j.cutCall != nil {
		calls = append(calls, *j.cutCall)
	}
	return calls
}

// Announce says on w that the log ended in a row cut short (replaced by
// Open with a row standing in for it, joblog.Partial.StandIn), quoting it
// with its credentials hidden, and how Seed counted its call; what a
// resumed run skips; and with verbose how many earlier calls still count
// against the rules (recent, as Seed returned).
func (j *Log) Announce(w io.Writer, recent int, verbose bool) {
	if j == nil {
		return
	}
	var cut string // cut off by joblog.Open
	if j.w != nil {
		cut = j.w.CutShort()
	}
	if j.cut != nil || cut != "" {
		text := cut
		if j.cut != nil {
			text = j.cut.Text
		}
		fmt.Fprintf(w, "pace: job log %s ended in a row cut short (a pace killed as it wrote it): %q", j.path, joblog.ShownRow(text, j.redact))
		if c := j.cutCall; c != nil {
			if j.cut.HasStart() {
				fmt.Fprintf(w, "; its call counts against the rules at its Starttime, %s", human.Instant(c.At))
			} else {
				fmt.Fprintf(w, "; its Starttime is cut off: its call counts against the rules from %s, when this run started, the latest it can have come", human.Instant(c.At))
			}
			if j.cost && !j.cut.HasCost() {
				fmt.Fprintf(w, ", at a cost that fills every cost rule (its Send, the call's cost, is cut off)")
			}
		}
		if cut != "" {
			what := "an item"
			if seq := joblog.SeqOf(cut); seq > 0 {
				what = fmt.Sprintf("item %d", seq)
			}
			fmt.Fprintf(w, "; replaced by a whole row that keeps its call for later runs and pace audit (Exitval %d), and is no row of %s for --resume", joblog.ExitCutShort, what)
		}
		fmt.Fprintln(w)
	}
	if j.future > 0 {
		fmt.Fprintf(w, "pace: job log %s has %d %s stamped after this host's clock (by up to %s: a clock set back, or another host's): "+
			"their calls count against the rules from now, the latest they can have come\n", j.path, j.future, human.Plural(j.future, "row"), human.Duration(j.ahead))
	}
	if j.resume != nil {
		// The counts are the log's: an input shorter than the log has
		// fewer of them, and the summary counts those it skipped.
		skip := j.resume.Skipping(-1)
		if again := j.resume.Again(); again > 0 {
			fmt.Fprintf(w, "pace: resuming from %s: it records %d %s that succeeded, skipped, and %d that failed, run again\n",
				j.path, skip, human.Plural(int(skip), "item"), again)
		} else {
			fmt.Fprintf(w, "pace: resuming from %s: it records %d %s as run, skipped\n", j.path, skip, human.Plural(int(skip), "item"))
		}
	}
	if verbose && recent > 0 {
		fmt.Fprintf(w, "pace: job log %s: %d earlier calls still count against the rules\n", j.path, recent)
	}
}

// ReadItems reads the items of r as items.Read does; when resuming it
// also marks those to skip and refuses an input that is not the one the
// log was written for (a *resume.InputChangedError) before sending
// anything.
func (j *Log) ReadItems(ctx context.Context, r io.Reader, opts items.ReadOptions, out chan<- runner.Item) error {
	if j == nil || j.resume == nil {
		return items.Read(ctx, r, opts, out)
	}
	return j.resume.ReadItems(ctx, r, opts, out)
}

// Skipped returns how many items the resume has skipped so far.
func (j *Log) Skipped() int64 {
	if j == nil || j.resume == nil {
		return 0
	}
	return j.resume.Skipped()
}

// ToRun returns how many of an input's n items will run: n less those a
// resumed run skips. It returns n when n < 0 (unknown).
func (j *Log) ToRun(n int64) int64 {
	if j == nil || j.resume == nil || n < 0 {
		return n
	}
	return n - j.resume.Skipping(n)
}

// Record appends r's row, after the rows of the calls it made besides
// its own (joblog.HopEntries), in one write.
func (j *Log) Record(r *runner.Result) error {
	if j == nil {
		return nil
	}
	e := joblog.EntryOf(r, j.command(&r.Job), j.cost)
	if hops := joblog.HopEntries(r, j.cost); hops != nil {
		return j.w.Write(append(hops, e)...)
	}
	return j.w.Write(e)
}

// Close closes the job log, reporting a failure to flush it.
func (j *Log) Close() error {
	if j == nil {
		return nil
	}
	return j.w.Close()
}
