package cmd

import (
	"github.com/pace-cli/pace/internal/redact"
	"github.com/pace-cli/pace/runner"
)

// shownCommand returns job's command line as pace shows and logs it: in
// failure lines, -v, the job log's Command column and --dry-run, with its
// credentials hidden (redact.Argv). The job runs its argv untouched.
func shownCommand(j *runner.Job) string {
	c := runner.Job{Argv: redact.New().Argv(j.Argv)}
	return c.CommandLine()
}

// shownStatus returns msg, a status or error message about job, with the
// credentials of job's argv hidden wherever msg quotes them, those base
// knows (pace's arguments': a URL given as -o, in the error of a body
// that could not be written), and those of any URL in it.
//
// A job whose argv could not be made (a line of commands that does not
// parse) has none: its item, the command line the message quotes, is
// read as one.
func shownStatus(base *redact.Redactor, j *runner.Job, msg string) string {
	red := base.With()
	red.AddArgv(j.Argv)
	if len(j.Argv) == 0 {
		red.AddArgv([]string{j.Item})
	}
	return red.String(msg)
}

// shownCommandError returns err, an error about the command argv found
// before any job runs (a template that does not parse, a program not
// found), with the credentials of argv hidden wherever its message quotes
// them: a whole command line given as one word is quoted whole.
func shownCommandError(argv []string, err error) error {
	red := redact.New()
	red.AddArgv(argv)
	return red.Error(err)
}

// shownItem returns item, job's item as shown returns it, with the
// credentials it holds hidden (redact.Redactor.Item).
func shownItem(j *runner.Job, item string) string { return redact.New().Item(j.Argv, item) }

// redactLogged returns line, a job log's Command column, as pace now
// writes it: rows written before commands were redacted hold credentials,
// which neither a resumed run's check nor its messages may show. A line
// that holds a placeholder is redacted again too: an earlier pace that
// redacted knew fewer secrets (apikey: and Token: headers, _auth names,
// user:pw@host), and its row must read as this one writes it. One an
// earlier pace wrote with control characters raw comes back quoted as
// now. A line that is not a command line as runner.Job.CommandLine writes
// them (pace fetch's METHOD URL, GNU parallel's, or one edited by hand) is
// redacted as a shell script, which leaves pace fetch's rows as they are.
func redactLogged(line string) string {
	argv, ok := runner.SplitCommandLine(line)
	if !ok {
		return redact.New().Argv([]string{line})[0]
	}
	return shownCommand(&runner.Job{Argv: argv})
}
