package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/runner"
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
}

const runLong = `Run one command per input item, at most -j at a time, starting each only
when every rate rule allows it.

Items are lines read from stdin or from -a FILE (NUL-separated with -0);
empty items are skipped. Jobs start as items arrive, so endless input
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
  "x; rm -rf ~" is one literal argument.

  Without a COMMAND, each item is a command line. Plain lines are split
  into words (quotes respected) and run directly; lines using shell syntax
  (| > < ; && $VAR $(...) globs ...) run under "sh -c". With --shell
  every command runs under "sh -c", items in a COMMAND quoted for it.
  A line that cannot be parsed (unbalanced quote) fails; the others go on.

  Children read stdin from /dev/null and run in their own process group;
  --timeout and interrupts kill the whole group.

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
		Use:     "run [flags] [--] [<command> [<arg>...]]",
		Short:   "Run a command per input item under rate rules",
		Long:    runLong,
		Example: runExample,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Command = args
			if runF != nil {
				return runF(opts)
			}
			return runRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().SetInterspersed(false) // flags after the command are the command's
	addRunFlags(cmd, opts)
	return cmd
}

// addRunFlags binds the flags of pace run (also those of pace itself, for
// the `pace [flags] -- command` shorthand).
func addRunFlags(cmd *cobra.Command, opts *RunOptions) {
	addCommonFlags(cmd, &opts.Common, defaultRunMargin)
	cmd.Flags().BoolVar(&opts.Shell, "shell", false, "run every command under \"sh -c\" (items in COMMAND are quoted for it)")
}

// runRun runs pace run with checked options.
func runRun(ctx context.Context, opts *RunOptions) error {
	o := &opts.Common
	if err := o.check(); err != nil {
		return err
	}
	ios := opts.IO

	var builder runner.Builder
	readOpts := runner.ReadOptions{NUL: o.Null}
	if len(opts.Command) > 0 {
		tmpl, err := runner.NewTemplate(opts.Command, opts.Shell)
		if err != nil {
			return flagErrorf("%v", err)
		}
		if !opts.Shell && !o.DryRun {
			if err := checkProgram(tmpl, opts.Command[0]); err != nil {
				return reportf(ios, ExitUsage, "%v", err)
			}
		}
		builder = tmpl
	} else {
		builder = runner.LineBuilder{Shell: opts.Shell}
		readOpts.Skip = isCommentOrBlank
	}

	in, err := openInput(o.Input, ios.In)
	if err != nil {
		return reportf(ios, ExitUsage, "%v", err)
	}
	defer in.close()

	executor := &runner.CommandExecutor{Builder: builder, Timeout: o.Timeout}
	if o.DryRun {
		return dryRun(ctx, ios, o, executor, nil, in, readOpts)
	}
	s := &session{
		f:           opts.Factory,
		opts:        o,
		executor:    executor,
		input:       in,
		readOpts:    readOpts,
		printResult: printOutput(o.Tag),
	}
	return s.run(ctx)
}

// checkProgram makes sure the template's program exists before anything
// runs, and suggests --shell for what looks like a shell command line.
func checkProgram(tmpl *runner.Template, first string) error {
	const hint = "; to run it as a shell command line, add --shell"
	prog, plain := tmpl.Program()
	if !plain {
		if strings.ContainsAny(first, " \t") && strings.ContainsAny(first, "|;&<>$`") {
			return fmt.Errorf("command %q looks like a shell command line%s", first, hint)
		}
		return nil // the program comes from the item
	}
	if _, err := exec.LookPath(prog); err != nil {
		if strings.ContainsAny(prog, " \t") {
			return fmt.Errorf("command %q not found%s", prog, hint)
		}
		return fmt.Errorf("command %q not found", prog)
	}
	return nil
}

// isCommentOrBlank reports whether a command line has nothing to run.
func isCommentOrBlank(line string) bool {
	t := strings.TrimLeft(line, " \t")
	return t == "" || t[0] == '#'
}

// printOutput returns the printer of a job's output: stdout, then stderr,
// each line prefixed with the item when tag is set.
func printOutput(tag bool) func(out, errOut io.Writer, r *runner.Result) {
	return func(out, errOut io.Writer, r *runner.Result) {
		if tag {
			prefix := r.Job.Item + "\t"
			r.Stdout.WriteTo(&prefixWriter{w: out, prefix: prefix})
			r.Stderr.WriteTo(&prefixWriter{w: errOut, prefix: prefix})
			return
		}
		r.Stdout.WriteTo(out)
		r.Stderr.WriteTo(errOut)
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
// logCommand is the command's job log Command column (nil: the command line).
func dryRun(ctx context.Context, ios *IOStreams, o *CommonOptions, e runner.Executor, logCommand func(*runner.Job) string, in *input, readOpts runner.ReadOptions) error {
	jl, err := loadJobLog(&o.JobLogOptions, e.Prepare, logCommand)
	if err != nil {
		return reportf(ios, ExitUsage, "%v", err)
	}
	items := make(chan runner.Item)
	errc := make(chan error, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(items)
		errc <- jl.readItems(rctx, in.r, readOpts, items)
	}()
	failed := false
	var seq, skipped int64
	for it := range items {
		seq++
		if it.Skip {
			skipped++
			continue
		}
		job := runner.Job{Seq: seq, Item: it.Text, Attempt: 1, Slot: int((seq-1)%int64(o.Jobs)) + 1}
		err := it.Err
		if err == nil {
			err = e.Prepare(&job)
		} else {
			err = fmt.Errorf("job %d: %w", seq, err)
		}
		if err != nil {
			fmt.Fprintf(ios.ErrOut, "pace: %v\n", err)
			failed = true
			continue
		}
		fmt.Fprintln(ios.Out, job.CommandLine())
	}
	if err := <-errc; err != nil {
		if errors.Is(err, runner.ErrInputChanged) {
			return reportf(ios, ExitUsage, "%v", err)
		}
		return reportf(ios, ExitFailed, "%s: %v", in.name, err)
	}
	if skipped > 0 {
		fmt.Fprintf(ios.ErrOut, "pace: %d items done in job log %s would be skipped\n", skipped, o.JobLog)
	}
	if failed {
		return &ExitError{Code: ExitFailed}
	}
	return nil
}
