package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/internal/costexpr"
	"github.com/pace-cli/pace/internal/foreground"
	"github.com/pace-cli/pace/internal/interrupt"
	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/jobout"
	"github.com/pace-cli/pace/internal/limiter"
	"github.com/pace-cli/pace/internal/resume"
	"github.com/pace-cli/pace/internal/runlog"
	"github.com/pace-cli/pace/internal/tmpl"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/runner/command"
	"github.com/pace-cli/pace/throttle"
)

// RunOptions are the inputs of pace run.
type RunOptions struct {
	IO      *IOStreams
	Factory *Factory
	Common  CommonOptions
	// Shell runs every command under "sh -c".
	Shell bool
	// Command is the command template; empty means each item is a
	// command line.
	Command []string
	// Sources are the input sources given after the command with ::: and
	// ::::, as GNU parallel takes them; none means -a or stdin.
	Sources []items.Source
	// dashed says that the command came after "--": arguments in it that
	// look like pace's flags are meant for the command.
	dashed bool
}

const runLong = `Run one command per input item, at most -j at a time, starting each only
when every rate rule allows it.

Items are lines read from stdin or from -a FILE (NUL-separated with -0);
empty and blank lines are skipped, but a value after ::: is an item even
when empty (::: '' a runs twice). Jobs start as items arrive, so endless input
works, and memory stays bounded. Each job's stdout and stderr are printed
whole when it ends, never mixed with other jobs' output; past 4 MB a
job's output waits in a temporary file. With -k, output follows input
order, and pace runs at most 4 x -j items past the oldest one still
running.

Rules:
  -r N/PERIOD allows at most N starts in any window of PERIOD. PERIOD is a
  unit (ms, s, sec, m, min, h, hour, d, day) or a duration such as 3s,
  500ms or 1m30s. Give several rules, repeated or comma-separated, and all
  hold at once: -r 10/s -r 500/min is -r 10/s,500/min. Every attempt,
  retries included, is admitted by the rules. Without -r only -j limits.

Commands:
  With a COMMAND, each item fills its placeholders (GNU parallel's):
    {}    the item                     dir/a.tar.gz
    {.}   without its extension        dir/a.tar
    {/}   basename                     a.tar.gz
    {//}  dirname                      dir
    {/.}  basename without extension   a.tar
    {#}   sequence number, from 1
    {%}   job slot, 1..-j
  Without a placeholder the item is appended as the last argument.
  Substitution is per argument and never goes through a shell: the item
  "x; rm -rf ~" is one literal argument. In the script of a shell run as
  sh -c 'echo {}' (bash, dash, zsh, ksh ...; after env, timeout, sudo
  and the like too) the item is quoted as with --shell; a script that is
  the item alone (sh -c {}) runs it as code. A placeholder in the quoted
  script of a shell within a script (sh -c "sh -c 'echo {}'") is refused:
  pass it as an argument (sh -c 'echo "$1"' sh {}). The command of
  ssh HOST COMMAND... is read by the remote shell: its items are quoted
  for it the same way (ssh HOST {} runs the item there as code).

  Without a COMMAND, each item is a command line. Plain lines are split
  into words (quotes respected) and run directly; lines using shell syntax
  (| > < ; && $VAR $(...) globs ...) run under "sh -c". With --shell
  every command runs under "sh -c", items in a COMMAND quoted for it.
  A line that cannot be parsed (unbalanced quote) fails; the others go on.

  Children read stdin from /dev/null and run in their own process group.
  Each job's environment has $` + command.JobEnv + ` set to a value of its own
  (the run's token and a number). --timeout and interrupts kill the
  job's whole group and (Linux) the processes holding that value, what
  left the group; if pace is killed outright (SIGKILL), its reaper kills
  what the running jobs started the same way.

Interrupts:
  The first Ctrl-C (SIGINT) or SIGTERM starts no more jobs and lets the
  running ones finish for up to --grace, then kills them; a second one
  kills them at once. The summary is printed either way.

` + jobLogHelp + "\n\n" + redisHelp + "\n\n" + exitCodesHelp

const runExample = `  # 5 starts per second and 12 per 3 seconds, 4 at a time
  pace run -r 5/s,12/3s -j 4 -a examples/items.txt -- echo {}

  # stay under an API's 10/s and 500/min; retry failures twice
  cat ids.txt | pace run -r 10/s -r 500/min --retries 2 -- curl -fsS https://api.example.com/items/{}

  # thumbnails, output in input order, each line tagged with its file
  find . -name '*.jpg' -print0 | pace run -0 -k --tag -j 8 -- convert {} -resize 128x thumbs/{/.}.png

  # each line is a command; see what would run without running it
  pace run --dry-run -a commands.txt

  # pipes need --shell; the item is quoted for the shell
  pace run --shell -a urls.txt -- 'curl -s {} | wc -c'`

// NewCmdRun returns the pace run command. runF, if not nil, replaces the
// real run (tests capture the options with it).
func NewCmdRun(f *Factory, runF func(*RunOptions) error) *cobra.Command {
	opts := &RunOptions{IO: f.IOStreams, Factory: f}
	cmd := &cobra.Command{
		Use:     "run [flags] [--] [<command> [<arg>...]] [::: <item>... | :::: <file>...]...",
		Short:   "Run a command per input item under rate rules",
		Long:    runLong,
		Example: runExample,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.setArgs(args, cmd.ArgsLenAtDash()); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().SetInterspersed(false) // flags after the command are the command's
	addRunFlags(cmd, opts)
	groupFlags(cmd)
	return cmd
}

// addRunFlags binds the flags of pace run (also those of pace itself, for
// the `pace [flags] -- command` shorthand).
func addRunFlags(cmd *cobra.Command, opts *RunOptions) {
	addCommonFlags(cmd, &opts.Common, defaultRunMargin, leastRunMargin)
	fl := cmd.Flags()
	fl.BoolVar(&opts.Shell, "shell", false, "run every command under \"sh -c\" (items in COMMAND are quoted for it)")
}

// setArgs splits the command line after the flags into the command and
// its input sources, and refuses what looks like a mistake.
func (opts *RunOptions) setArgs(args []string, dash int) error {
	cmdArgs, sources, err := items.SplitSources(args)
	if err != nil {
		return flagErrorf("%v", err)
	}
	opts.Command, opts.Sources, opts.dashed = cmdArgs, sources, dash >= 0 && dash == 0
	if !opts.dashed {
		if err := paceFlagAfterCommand(cmdArgs); err != nil {
			return err
		}
	}
	return nil
}

// runRun runs pace run with checked options.
func runRun(ctx context.Context, opts *RunOptions) error {
	o := &opts.Common
	if err := o.check(); err != nil {
		return err
	}
	var sourceFiles []pathFlag
	for _, s := range opts.Sources {
		for _, name := range s.Files {
			sourceFiles = append(sourceFiles, pathFlag{flag: "::::", path: name})
		}
	}
	if err := o.checkPaths(sourceFiles...); err != nil {
		return err
	}
	ios := opts.IO
	readOpts, err := o.readOptions()
	if err != nil {
		return err
	}

	var builder command.Builder
	if len(opts.Command) > 0 {
		c, err := tmpl.ParseCommand(opts.Command, opts.Shell)
		if err != nil {
			return flagErrorf("%v", shownCommandError(opts.Command, err))
		}
		if err := checkCommand(c, opts.Command, opts.Shell, o.DryRun); err != nil {
			return reportf(ios, ExitUsage, "%v", shownCommandError(opts.Command, err))
		}
		builder = commandBuilder{c}
	} else {
		builder = command.Lines{Shell: opts.Shell}
		readOpts.Skip = isCommentOrBlank
	}

	in, err := openUntilInterrupt(opts.Factory, func() (*items.Input, error) { return opts.openInput(ios.In) })
	var exitErr *ExitError
	if errors.As(err, &exitErr) {
		return err // interrupted
	}
	if err != nil {
		return reportf(ios, ExitUsage, "%v", err)
	}
	defer in.Close()
	columns := 1 // each item's columns; 0: any number
	if in.Sources {
		if o.ColSep != "" {
			return flagErrorf("--colsep splits the lines of -a or stdin; with ::: and :::: the sources are the columns")
		}
		readOpts.NUL, readOpts.Sources = true, true
		columns = len(opts.Sources)
	} else if readOpts.ColSep != nil {
		columns = 0
	}
	if c, ok := builder.(commandBuilder); ok {
		if err := checkColumns("the command", c.c.MaxColumn(), columns, in.Sources); err != nil {
			return err
		}
	}
	if o.Cost != nil {
		if err := checkColumns(fmt.Sprintf("--cost %q", o.Cost), o.Cost.MaxColumn(), columns, in.Sources); err != nil {
			return err
		}
	}

	ex := &command.Executor{Builder: builder, Timeout: o.Timeout, SpareProcs: true,
		Reaper: opts.Factory.reaper, ReaperPath: opts.Factory.reaperPath}
	defer ex.Close()
	var executor runner.Executor = ex
	if o.Cost != nil {
		executor = costexpr.Executor{Executor: ex, Expr: o.Cost, Rules: o.allRules()}
	}
	if o.DryRun {
		return dryRun(ctx, opts.Factory, o, executor, nil, in, readOpts)
	}
	print := printOutput(o.Tag)
	if o.Tag {
		print = tagShown(print)
	}
	s := &session{
		f:        opts.Factory,
		opts:     o,
		executor: executor,
		jobs:     ex,
		opened: func(b throttle.Backend) {
			ex.Inherit = func(a throttle.Admission) []*os.File { return limiter.Inherited(b, a) }
		},
		input:       in,
		readOpts:    readOpts,
		print:       print,
		logCommand:  jobLogCommand,
		show:        func(j *runner.Job) string { return j.Item },
		filesPerJob: 6, // stdin, two pipes (both ends while starting), two spill files
	}
	return s.run(ctx)
}

// commandBuilder builds each job's argv from a command template.
type commandBuilder struct{ c *tmpl.Command }

// Build expands the template with the job's item, columns, number and slot.
func (b commandBuilder) Build(job *runner.Job) ([]string, error) {
	argv, err := b.c.Expand(tmpl.Values{Item: job.Item, Columns: job.Cols, Seq: job.Seq, Slot: job.Slot})
	if err != nil {
		return nil, runner.Permanent(err)
	}
	return argv, nil
}

// checkCommand refuses, before anything runs, a command that cannot run:
// a program that does not exist or is not executable, or a whole command
// line given as one word.
func checkCommand(c *tmpl.Command, args []string, shell, dryRun bool) error {
	const hint = "to run it as a shell command line, add --shell"
	if !shell && len(args) == 1 && strings.ContainsAny(args[0], " \t") {
		return fmt.Errorf("command %q is one word that holds spaces: give its words separately "+
			"(pace run -- %s), or %s", args[0], args[0], hint)
	}
	prog, plain := c.Program()
	if !plain || dryRun {
		return nil // the program comes from the item, or the shell
	}
	path, err := exec.LookPath(prog)
	switch {
	case err == nil:
		return foreground.CheckInterpreter(prog, path)
	case foreground.IsDir(prog):
		return fmt.Errorf("command %q is a directory, not a program", prog)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("command %q is not executable: chmod +x it, or run it with its interpreter (pace run -- sh %s ...)", prog, prog)
	case strings.ContainsAny(prog, " \t|;&<>$`"):
		return fmt.Errorf("command %q not found; %s", prog, hint)
	}
	return fmt.Errorf("command %q not found", prog)
}

// isCommentOrBlank reports whether a command line has nothing to run.
func isCommentOrBlank(line string) bool {
	t := strings.TrimLeft(line, " \t")
	return t == "" || t[0] == '#'
}

// printOutput returns the printer of a job's output: stdout, then stderr,
// each line prefixed with the item when tag is set. It returns the error
// of writing stdout, else that of writing stderr: either way the job's
// output is lost, and the job has failed. Its stderr is written even when
// its stdout could not be.
func printOutput(tag bool) func(out, errOut io.Writer, r *runner.Result) error {
	return func(out, errOut io.Writer, r *runner.Result) error {
		if tag {
			prefix := r.Job.Item + "\t"
			out = &prefixWriter{w: out, prefix: prefix}
			errOut = &prefixWriter{w: errOut, prefix: prefix}
		}
		// Even an empty stdout is handed over: it says whether stdout is
		// gone. An empty write to stderr, a device, fails on /dev/full.
		_, err := r.Stdout.WriteTo(out)
		if r.Stderr.Len() > 0 {
			if _, eerr := r.Stderr.WriteTo(errOut); err == nil {
				err = eerr
			}
		}
		return err
	}
}

// tagShown returns print with --tag's item as shownItem shows it: an item
// that goes where a credential goes is hidden.
func tagShown(print func(out, errOut io.Writer, r *runner.Result) error) func(out, errOut io.Writer, r *runner.Result) error {
	return func(out, errOut io.Writer, r *runner.Result) error {
		c := *r
		c.Job.Item = shownItem(&r.Job, r.Job.Item)
		return print(out, errOut, &c)
	}
}

// prefixWriter writes prefix before every line.
type prefixWriter struct {
	w       io.Writer
	prefix  string
	midLine bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	n := len(b)
	var buf bytes.Buffer
	for len(b) > 0 {
		if !p.midLine {
			buf.WriteString(p.prefix)
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			buf.Write(b)
			p.midLine = true
			break
		}
		buf.Write(b[:i+1])
		b = b[i+1:]
		p.midLine = false
	}
	if _, err := p.w.Write(buf.Bytes()); err != nil {
		return 0, err
	}
	return n, nil
}

// dryRun prints the command each item would run, with the slot it would
// likely get, without running anything or consuming quota. With --joblog
// and --resume or --resume-failed it shows what a resumed run would do:
// items the log says are done are left out, and an input that differs from
// the log is refused as the real run would refuse it. The log is only read.
// logCommand is the command's job log Command column (nil: the command
// line). An interrupt stops it as it stops a real run.
func dryRun(ctx context.Context, f *Factory, o *CommonOptions, e runner.Executor, logCommand func(*runner.Job) string, in *items.Input, readOpts items.ReadOptions) error {
	ios := f.IOStreams
	jl, err := runlog.Load(o.JobLogOptions.runlog(e.Prepare, logCommand))
	if err != nil {
		return reportf(ios, ExitUsage, "%v", err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := jobout.New(ios.Out, cancel, isTerminal)
	// An interrupt stops it, and a stdout that is not being read is not
	// waited for.
	sigs := &interrupt.Handler{Signals: f.Signals, Grace: 0, Out: ios.ErrOut}
	sigs.Watch(func() { cancel(); out.GiveUp() })
	defer sigs.Close()

	feed := items.NewFeed(rctx, func(ctx context.Context, out chan<- runner.Item) error {
		return jl.ReadItems(ctx, in.R, readOpts, out)
	}, func(int64) {})
	failed := false
	var seq, skipped int64
	var writeErr error
loop:
	for {
		var it runner.Item
		select {
		case i, ok := <-feed.In:
			if !ok {
				break loop
			}
			it = i
		case <-rctx.Done():
			break loop
		}
		if rctx.Err() != nil {
			break
		}
		seq++
		if it.Skip {
			skipped++
			continue
		}
		job := runner.Job{Seq: seq, Item: it.Text, Cols: it.Cols, Attempt: 1, Slot: int((seq-1)%int64(o.Jobs)) + 1}
		err := it.Err
		if err == nil {
			err = e.Prepare(&job)
		} else {
			err = fmt.Errorf("job %d: %w", seq, err)
		}
		if err != nil {
			ios.sayf("%v", err)
			failed = true
			continue
		}
		out.Begin()
		if _, err := fmt.Fprintln(out, shownCommand(&job)); err != nil {
			if cerr := out.Cut(); cerr != nil {
				err = fmt.Errorf("%w (its part written stays: %v)", err, cerr)
			}
			writeErr = err
			cancel()
			break
		}
	}
	cancel()
	// The reader may still be blocked reading an idle pipe or terminal;
	// it cannot be interrupted, and the process is about to exit anyway.
	got, _ := feed.Result()
	readErr := got.Err
	switch sig := sigs.Signal(); {
	case sig != nil:
		return stoppedf(ios, sig, "%s: dry run stopped", interrupt.Name(sig))
	case out.Closed():
		return &ExitError{Code: ExitBrokenPipe}
	case writeErr != nil:
		return reportf(ios, ExitFailed, "write: %v", writeErr)
	case readErr != nil && !errors.Is(readErr, context.Canceled):
		if errors.Is(readErr, resume.ErrInputChanged) || errors.Is(readErr, resume.ErrTooFarAhead) {
			return reportf(ios, ExitUsage, "%v", readErr)
		}
		return reportf(ios, ExitFailed, "%s: %v", in.Name, readErr)
	}
	if skipped > 0 {
		ios.sayf("%d %s done in job log %s would be skipped", skipped, plural(int(skipped), "item"), o.JobLog)
	}
	if failed {
		return &ExitError{Code: ExitFailed}
	}
	return nil
}
