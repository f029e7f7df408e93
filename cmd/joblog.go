package cmd

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/internal/resume"
	"github.com/pace-cli/pace/internal/runlog"
	"github.com/pace-cli/pace/runner"
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
  (network error, timeout, interrupt); Receive counts body bytes. A
  redirect followed, or a request sent again, has a row before its
  attempt's: Exitval -3, Command "# redirect followed: METHOD URL" (or
  "# sent again: ...").

  The rules hold across runs that share a job log: before admitting
  anything pace counts the log's admissions that are still inside each
  rule's window, so -r 10000/day holds over restarts. (With --redis the
  quota lives in Redis and the log is not consulted for it.) A row that a
  pace killed outright left cut short counts too, and the run replaces it
  by a whole row standing in for it (Exitval -2), which --resume takes for
  no row: its item runs again.

  --resume skips the items that have a row in the job log; --resume-failed
  skips only those whose last row succeeded and runs the failed ones
  again. Items are matched by Seq, their position in the input, so the
  input and command must be the ones the log was written with: an item
  whose command differs from its row is refused (exit 2) before anything
  runs. Check a log with "pace audit".`

// addJobLogFlags binds --joblog, --resume and --resume-failed to o.
func addJobLogFlags(cmd *cobra.Command, o *JobLogOptions) {
	fl := cmd.Flags()
	fl.Var(pathValue{&o.JobLog, "want a file name; leave --joblog out for no job log"}, "joblog",
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

// jobLogCommand is the Command column of pace run's rows: the command
// line, quoted for a shell, with its credentials hidden (shownCommand).
func jobLogCommand(j *runner.Job) string { return shownCommand(j) }

// fetchJobLogCommand is the Command column of pace fetch's rows: "METHOD
// URL", the URL with its credentials redacted (Argv as the fetch
// executor prepares it).
func fetchJobLogCommand(j *runner.Job) string { return strings.Join(j.Argv, " ") }

// runlog returns the job log options of a run whose executor prepares
// jobs with prepare and whose rows' Command column command makes (nil:
// the command line).
func (o *JobLogOptions) runlog(prepare func(*runner.Job) error, command func(*runner.Job) string) runlog.Options {
	if command == nil {
		command = jobLogCommand
	}
	var mode resume.Mode
	switch {
	case o.Resume:
		mode = resume.All
	case o.ResumeFailed:
		mode = resume.Failed
	}
	return runlog.Options{Path: o.JobLog, Resume: mode, Command: command, Prepare: prepare, Redact: redactLogged}
}
