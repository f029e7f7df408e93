package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/internal/interrupt"
	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/internal/outfile"
	"github.com/pace-cli/pace/internal/plot"
	"github.com/pace-cli/pace/internal/plot/fromlog"
	"github.com/pace-cli/pace/throttle"
)

// PlotOptions are the inputs of pace plot.
type PlotOptions struct {
	IO *IOStreams
	// Rules to draw; none means those the job log's header names.
	Rules []throttle.Rule
	// Output is the SVG file to write; "-" means stdout.
	Output string
	// File is the job log; "-" or "" means stdin.
	File string
	// Width and Height of the picture, in pixels.
	Width, Height int
	// Title is drawn at the top; empty means the job log's name.
	Title string
	// Signals delivers SIGINT and SIGTERM; nil means none ever come.
	Signals <-chan os.Signal
}

const plotLong = `Draw a run from its job log as one self-contained SVG picture: per rule,
how full its window was over time as a fraction of its limit (100% is the
line the run must never cross); every call as a tick coloured by its outcome
(ok, failed, retried, refused with 429); the calls in flight; and the
server's pauses, as shaded bands.

The job log is pace's --joblog or GNU parallel's. A log pace wrote names its
rules in its header, so -r is needed only for GNU parallel's logs, or to
draw other rules. A row of a cost rule counts the cost pace wrote in Send.
A row followed by another of the same Seq is an attempt that was retried;
an Exitval of 429 or 503 (pace fetch) is a refusal, and the admissions it
held back (nothing was admitted until the next call) are a pause.

The picture stays small and readable for any number of calls: time is
binned by pixel, and each bin shows the most any window held, so a breach
of a rule, however brief, is never averaged away.`

const plotExample = `  # the picture of a run, named by its job log's rules
  pace plot -o run.svg run.log

  # GNU parallel's log, with the rules to draw
  pace plot -r 10/s,500/min -o parallel.svg parallel.log`

// NewCmdPlot returns the pace plot command. runF, if not nil, replaces the
// real run.
func NewCmdPlot(f *Factory, runF func(*PlotOptions) error) *cobra.Command {
	opts := &PlotOptions{IO: f.IOStreams, Width: 1000, Height: 600, Signals: f.Signals}
	cmd := &cobra.Command{
		Use:     "plot [-r <rules>] -o <file.svg> [<joblog> | -]",
		Short:   "Draw a run from its job log as an SVG picture",
		Long:    plotLong,
		Example: plotExample,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if args[0] == "" {
					return flagErrorf("invalid argument \"\" for the job log: want a file name, or - for stdin")
				}
				opts.File = args[0]
			}
			if opts.Output == "" {
				return flagErrorf("pace plot needs -o FILE.svg (or -o - for stdout)")
			}
			if err := opts.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return runPlot(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.VarP(rulesValue{rules: &opts.Rules}, "rate", "r", "rule `N/PERIOD` to draw; repeat or comma-separate (default: the job log's)")
	fl.Var(rulesValue{rules: &opts.Rules, cost: true}, "cost-rate", "cost rule `N/PERIOD` to draw, counting the job log's Send column")
	fl.VarP(pathValue{&opts.Output, "want a file name, or - for stdout"}, "output", "o", "write the SVG picture to `FILE` (- for stdout)")
	fl.Var(intValue{&opts.Width}, "width", "the picture's width in `PIXELS`")
	fl.Var(intValue{&opts.Height}, "height", "the picture's height in `PIXELS`")
	fl.StringVar(&opts.Title, "title", "", "the picture's `TITLE` (default: the job log's name and rules)")
	cmd.RegisterFlagCompletionFunc("rate", cobra.NoFileCompletions)
	return cmd
}

// check refuses a size past plot.MaxSize (a typo would write hundreds of
// megabytes) and an -o that names the job log.
func (opts *PlotOptions) check() error {
	for _, d := range []struct {
		flag string
		n    int
	}{{"--width", opts.Width}, {"--height", opts.Height}} {
		if d.n > plot.MaxSize {
			return flagErrorf("invalid argument %d for %q: want at most %d pixels", d.n, d.flag, plot.MaxSize)
		}
	}
	if opts.Output == "-" {
		return nil
	}
	return checkClashes([]pathFlag{{flag: "the job log", path: opts.File}, {flag: "-o", path: opts.Output, output: true}})
}

// runPlot reads the job log and writes the picture.
func runPlot(ctx context.Context, opts *PlotOptions) error {
	ios := opts.IO
	if opts.Output != "-" {
		if err := outfile.Check(opts.Output); err != nil {
			return reportf(ios, ExitUsage, "plot: -o %v", err)
		}
	}
	r, name, closeFile, err := openFileArg(opts.File, ios.In)
	if err != nil {
		return reportf(ios, ExitUsage, "plot: %v", err)
	}
	defer closeFile()
	if r == ios.In && ios.IsStdinTTY() {
		fmt.Fprintln(ios.ErrOut, "pace: plot: reading the job log from the terminal; end with Ctrl-D")
	}
	// A signal while it reads (or as it ends) ends it with the signal's
	// exit code and no picture.
	type read struct {
		log *joblog.Log
		err error
	}
	res, sig, _ := interrupt.Until(opts.Signals, func() read {
		log, err := joblog.ReadAtMost(r, plot.MaxRows)
		return read{log, err}
	}, nil)
	if sig != nil {
		return stoppedf(ios, sig, "%s: plot of %s stopped: no picture written", interrupt.Name(sig), name)
	}
	log := res.log
	if res.err != nil {
		return reportf(ios, ExitUsage, "plot: %s: %v", name, res.err)
	}
	rules, err := log.RulesOr(opts.Rules)
	if err != nil {
		return reportf(ios, ExitUsage, "plot: %s: %v", name, err)
	}
	if len(rules) == 0 {
		return reportf(ios, ExitUsage, "plot: %s names no rules: give the rules to draw with -r N/PERIOD", name)
	}
	calls, pauses := fromlog.Calls(plotEntries(ios, name, log))
	title := opts.Title
	if title == "" {
		title = fmt.Sprintf("%s: %d %s under %s", filepath.Base(name), len(calls), plural(len(calls), "call"), throttle.FormatRules(rules))
	}
	prules := make([]plot.Rule, len(rules))
	for i, rule := range rules {
		prules[i] = plot.Rule{N: rule.N, Window: rule.Window, Cost: rule.Cost, Label: rule.String()}
	}
	var b bytes.Buffer
	if err := plot.Render(&b, prules, calls, pauses, plot.Options{Width: opts.Width, Height: opts.Height, Title: title}); err != nil {
		return reportf(ios, ExitUsage, "plot: %v", err)
	}
	if opts.Output == "-" {
		if _, err := ios.Out.Write(b.Bytes()); err != nil {
			return &ExitError{Code: printFailed(ios, err)} // 141 when its reader is gone (| head)
		}
		return nil
	}
	// A FIFO waits for its reader: a signal ends the wait, and leaves the
	// FIFO as it was.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- outfile.WriteFile(wctx, opts.Output, b.Bytes()) }()
	var werr error
	select {
	case werr = <-done:
	case sig := <-opts.Signals:
		cancel()
		if <-done != nil {
			return stoppedf(ios, sig, "%s: plot of %s stopped: no picture written", interrupt.Name(sig), name)
		}
	}
	if errors.Is(werr, syscall.EPIPE) { // a FIFO's reader is gone
		return &ExitError{Code: ExitBrokenPipe}
	}
	if werr != nil {
		return reportf(ios, ExitFailed, "plot: -o %v", werr)
	}
	ios.sayf("wrote %s (%d %s, %s)", opts.Output, len(calls), plural(len(calls), "call"), human.Bytes(int64(b.Len())))
	return nil
}

// plotEntries returns the rows of log to plot, saying on stderr what it
// makes of rows cut short: the last row, cut short (a pace killed as it
// wrote it), is plotted where it holds its Starttime, and so are the rows
// standing in for rows cut short; those without one are not.
func plotEntries(ios *IOStreams, name string, log *joblog.Log) []joblog.Entry {
	unplaced := func(e joblog.Entry) bool { p := e.Partial(); return p != nil && !p.HasStart() }
	entries := slices.DeleteFunc(slices.Clone(log.Entries), unplaced)
	if n := len(log.Entries) - len(entries); n == 1 {
		ios.sayf("plot: %s: a row standing in for a row cut short (Exitval %d) lacks its Starttime: not plotted", name, joblog.ExitCutShort)
	} else if n > 1 {
		ios.sayf("plot: %s: %d rows standing in for rows cut short (Exitval %d) lack their Starttime: not plotted", name, n, joblog.ExitCutShort)
	}
	if p := log.CutShort; p != nil {
		how := "its Starttime is cut off: not plotted"
		if p.HasStart() {
			entries, how = append(entries, p.Entry), "plotted at its Starttime"
		}
		ios.sayf("plot: %s line %d: the last row is incomplete (pace was stopped while writing it): %q; %s",
			name, p.Line, joblog.ShownRow(p.Text, redactLogged), how)
	}
	return entries
}
