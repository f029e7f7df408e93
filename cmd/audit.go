package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/internal/audit"
	"github.com/pace-cli/pace/internal/interrupt"
	"github.com/pace-cli/pace/throttle"
)

// AuditOptions are the inputs of pace audit.
type AuditOptions struct {
	IO *IOStreams
	// Rules are the rules to check; none means those the job log's header
	// names.
	Rules []throttle.Rule
	// Jobs is the cap on calls in flight assumed for the fastest legal
	// makespan; 0 means no cap.
	Jobs int
	// JSON writes the report as one JSON object.
	JSON bool
	// File is the job log or timestamp file; "-" or "" means stdin.
	File string
	// Signals delivers SIGINT and SIGTERM; nil means none ever come.
	Signals <-chan os.Signal
}

const auditLong = `Check a record of calls against rate rules: did it keep them, how close
did it come, and how fast could it have gone?

The input is a job log (pace's --joblog or GNU parallel's --joblog, one
row per call: the Starttime column is the admission instant) or plain
timestamps, one per line, as epoch seconds with an optional fraction
(1700000000.25) or RFC 3339 (2023-11-14T22:13:20.25Z). The format is
detected from the first non-blank line: a line with tabs is a job log.
Every row counts as a call, failed and killed jobs included (they were
admitted), and so does every retry (one row per attempt) and every
redirect pace fetch followed (a row of its own, Exitval -3).

For each rule the report gives the peak number of calls in any window
(t-PERIOD, t], as a count and as a share of N, the number of calls that
broke it, and the first of them (its Seq in a job log, its position among
the timestamps otherwise). Overall it gives the calls, the makespan (first
to last call), the fastest makespan the rules allow for as many calls
(with --jobs N also at most N in flight, each lasting the log's median
job runtime) and the efficiency: fastest / makespan. Near 100%, the run
went as fast as the rules let it; above 100%, faster: a broken rule, or
with --jobs uneven runtimes (the median overstates them). When the rules
allow every call at once (a short log under 10000/day), they never held
the run back and the efficiency is n/a (null in JSON).

A job log whose last row is cut short (a pace killed as it wrote it; a
row cut short anywhere else is an error) is audited with the rows before
it. pace audit says so on stderr, quoting the row: its call counts at
its Starttime if the row holds it whole; if not, the call is not
counted, but could have come at any time, so a rule is proven kept only
if its peak leaves room for one more call (and a cost rule only if the
row holds its cost, Send); otherwise exit 4, no verdict for that rule.
A row standing in for a row cut short (Exitval -2, written by the run
that found it) is taken as that row was.

Exit codes:
  0    every rule was kept
  1    some rule was broken
  2    bad flags, input that cannot be read (the bad line is quoted), or
       a report that cannot be written (a full disk): no verdict
  4    no call was seen to break a rule, but the last row, cut short, may
       have (its Starttime or its cost is cut off): no verdict
  130  stopped by SIGINT, which pace dies of (a shell sees 130): no
       verdict (143: SIGTERM)
  141  stdout closed by its reader (| head): no verdict`

const auditExample = `  # did yesterday's run keep the API's limits?
  pace audit -r 10/s,500/min,10000/day run.joblog

  # check GNU parallel's log the same way, with its -j 8
  pace audit -r 5/s -j 8 parallel.log

  # check when requests reached a server, from its access log
  awk '{print $1}' arrivals.txt | pace audit -r 100/min --json -`

// NewCmdAudit returns the pace audit command. runF, if not nil, replaces
// the real run (tests capture the options with it).
func NewCmdAudit(f *Factory, runF func(*AuditOptions) error) *cobra.Command {
	opts := &AuditOptions{IO: f.IOStreams, Signals: f.Signals}
	cmd := &cobra.Command{
		Use:     "audit -r <rules> [-j <n>] [--json] [<file> | -]",
		Short:   "Check a job log or timestamps against rate rules",
		Long:    auditLong,
		Example: auditExample,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if args[0] == "" {
					return flagErrorf("invalid argument \"\" for the job log or timestamp file: want a file name, or - for stdin")
				}
				opts.File = args[0]
			}
			if opts.Jobs < 0 {
				return flagErrorf("invalid argument %d for \"-j, --jobs\": want at least 0", opts.Jobs)
			}
			if runF != nil {
				return runF(opts)
			}
			return runAudit(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.VarP(rulesValue{rules: &opts.Rules}, "rate", "r",
		"rule `N/PERIOD` to check, e.g. 10/s, 500/min, 10000/day; repeat or comma-separate\n(default: the rules the job log's header names)")
	fl.Var(rulesValue{rules: &opts.Rules, cost: true}, "cost-rate",
		"cost rule `N/PERIOD` to check: the sum of the calls' costs (a pace job log's Send column)")
	fl.IntVarP(&opts.Jobs, "jobs", "j", 0, "assume at most `N` calls in flight for the fastest makespan (0: no cap)")
	fl.BoolVar(&opts.JSON, "json", false, "write the report as one JSON object")
	cmd.RegisterFlagCompletionFunc("rate", cobra.NoFileCompletions)
	cmd.RegisterFlagCompletionFunc("jobs", cobra.NoFileCompletions)
	return cmd
}

// runAudit reads the input, audits it and writes the report on stdout.
// A signal while it reads or audits (or as it ends) ends it with the
// signal's exit code and no report: part of the calls prove nothing.
func runAudit(_ context.Context, opts *AuditOptions) error {
	ios := opts.IO
	r, name, closeFile, err := openFileArg(opts.File, ios.In)
	if err != nil {
		return reportf(ios, ExitUsage, "audit: %v", err)
	}
	defer closeFile()
	if r == ios.In && ios.IsStdinTTY() {
		fmt.Fprintln(ios.ErrOut, "pace: audit: reading calls from the terminal, one per line; end with Ctrl-D")
	}
	type audited struct {
		rep     *audit.Report
		err     error // the input cannot be read
		noRules bool  // neither -r nor the input names rules
	}
	res, sig, _ := interrupt.Until(opts.Signals, func() audited {
		calls, err := audit.Read(r, audit.MaxCalls)
		if err != nil {
			return audited{err: err}
		}
		rules := opts.Rules
		if len(rules) == 0 {
			rules = calls.Rules
		}
		if len(rules) == 0 {
			return audited{err: calls.RulesErr, noRules: calls.RulesErr == nil}
		}
		return audited{rep: audit.New(rules, opts.Jobs, calls)}
	}, nil)
	if sig != nil {
		return stoppedf(ios, sig, "%s: audit of %s stopped: no verdict", interrupt.Name(sig), name)
	}
	switch {
	case res.err != nil:
		return reportf(ios, ExitUsage, "audit: %s: %v", name, res.err)
	case res.noRules:
		return reportf(ios, ExitUsage, "audit: %s names no rules: give the rules to check with -r N/PERIOD (and --cost-rate)", name)
	}
	rep := res.rep
	rep.Input, rep.Redact = name, redactLogged
	if note := rep.CutNote(); note != "" {
		fmt.Fprintf(ios.ErrOut, "pace: audit: %s %s\n", name, note)
	}
	if opts.JSON {
		err = rep.WriteJSON(ios.Out)
	} else {
		err = rep.WriteText(ios.Out)
	}
	if err != nil {
		if errors.Is(err, syscall.EPIPE) { // not 1: that says a rule was broken
			return &ExitError{Code: ExitBrokenPipe}
		}
		return reportf(ios, ExitUsage, "audit: write report: %v", err)
	}
	switch {
	case rep.Broken():
		return &ExitError{Code: ExitFailed}
	case !rep.OK:
		return &ExitError{Code: ExitUnproven}
	}
	return nil
}
