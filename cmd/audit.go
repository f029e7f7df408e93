package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/internal/joblog"
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
admitted), and so does every retry (one row per attempt).

For each rule the report gives the peak number of calls in any window
(t-PERIOD, t], as a count and as a share of N, the number of calls that
broke it, and the first of them (its Seq in a job log, its position among
the timestamps otherwise). Overall it gives the calls, the makespan (first
to last call), the fastest makespan the rules allow for as many calls
(with --jobs N also at most N in flight, each lasting the log's median
job runtime) and the efficiency: fastest / makespan. An efficiency near
100% means the run went as fast as the rules let it; above 100% means it
went faster, which only a broken rule allows. When the rules allow every
call at once (a short log under 10000/day), they never held the run back
and the efficiency is n/a (null in JSON).

Exit codes:
  0  every rule was kept
  1  some rule was broken
  2  bad flags, or input that cannot be read (the bad line is quoted)`

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
// A signal while it reads or audits ends it with the signal's exit code
// and no report: part of the calls prove nothing.
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
		rep     *auditReport
		err     error // the input cannot be read
		noRules bool  // neither -r nor the input names rules
	}
	res, sig := untilSignal(opts.Signals, func() audited {
		calls, err := readCalls(r, maxAuditCalls)
		if err != nil {
			return audited{err: err}
		}
		rules := opts.Rules
		if len(rules) == 0 {
			rules = calls.rules
		}
		if len(rules) == 0 {
			return audited{noRules: true}
		}
		return audited{rep: newAuditReport(rules, opts.Jobs, calls)}
	})
	if sig != nil {
		return reportf(ios, signalExitCode(sig), "%s: audit of %s stopped: no verdict", signalName(sig), name)
	}
	switch {
	case res.err != nil:
		return reportf(ios, ExitUsage, "audit: %s: %v", name, res.err)
	case res.noRules:
		return reportf(ios, ExitUsage, "audit: %s names no rules: give the rules to check with -r N/PERIOD (and --cost-rate)", name)
	}
	rep := res.rep
	rep.Input = name
	if opts.JSON {
		err = rep.writeJSON(ios.Out)
	} else {
		err = rep.writeText(ios.Out)
	}
	if err != nil {
		return reportf(ios, ExitFailed, "audit: write report: %v", err)
	}
	if !rep.OK {
		return &ExitError{Code: ExitFailed}
	}
	return nil
}

// Input formats that pace audit reads.
const (
	formatJobLog     = "joblog"
	formatTimestamps = "timestamps"
)

// calls is what pace audit knows about the calls of a run.
type calls struct {
	format string
	rules  []throttle.Rule // the rules a job log's header names
	times  []throttle.Call
	// seqs[i] names times[i] in the report: the job log's Seq, or the
	// position among the timestamps (from 1).
	seqs []int64
	// runtimes of the jobs; empty for timestamps.
	runtimes []time.Duration
	failed   int // rows with a non-zero Exitval or a Signal
}

// maxAuditCalls bounds the calls pace audit holds, and so its memory
// (about 200 bytes a call while it audits them: 2 GB at the cap): the input is read one
// line at a time and a line is at most joblog.MaxLine long, so no input,
// however long (an endless pipe, /dev/zero), grows it further.
const maxAuditCalls = 10_000_000

// errTooManyCalls is returned by readCalls for an input of more calls
// than it holds.
var errTooManyCalls = errors.New("too many calls")

// readCalls reads a job log or a timestamp file, telling them apart by
// the first non-blank line: a job log's lines have tabs. It holds at most
// maxCalls calls: more are an error wrapping errTooManyCalls. Other
// errors are *joblog.LineError values quoting the bad line, or read
// errors.
func readCalls(r io.Reader, maxCalls int) (*calls, error) {
	c := &calls{}
	format, rules, err := joblog.Scan(r, func(format joblog.Format, e joblog.Entry) error {
		if len(c.times) >= maxCalls {
			return fmt.Errorf("%w: more than %d, the most pace audit reads; audit the file in parts (split -l %d)",
				errTooManyCalls, maxCalls, maxCalls)
		}
		c.times = append(c.times, throttle.Call{At: e.Start, Cost: e.Cost()})
		c.seqs = append(c.seqs, int64(e.Seq))
		if format == joblog.JobLog {
			c.runtimes = append(c.runtimes, e.Runtime)
			if e.Failed() {
				c.failed++
			}
		}
		return nil
	})
	if err != nil {
		var le *joblog.LineError
		if !errors.As(err, &le) && !errors.Is(err, errTooManyCalls) {
			err = fmt.Errorf("read: %w", err)
		}
		return nil, err
	}
	c.format, c.rules = formatTimestamps, nil
	if format == joblog.JobLog {
		c.format, c.rules = formatJobLog, rules
	}
	return c, nil
}

// auditReport is the result of pace audit.
type auditReport struct {
	Input  string
	Format string
	Calls  int
	Failed int // job log rows that failed; 0 for timestamps
	// First and Last are the earliest and latest call; zero without calls.
	First, Last time.Time
	Makespan    time.Duration
	// Fastest is the makespan of the fastest legal schedule for Calls
	// calls under the rules, with at most Jobs in flight (0: no cap) each
	// lasting MedianRuntime.
	Fastest       time.Duration
	Jobs          int
	MedianRuntime time.Duration
	// Efficiency is Fastest / Makespan; HasEfficiency is false when that
	// is undefined or meaningless: no calls, or a fastest makespan of 0
	// (the rules allow every call at once, so they never held the run
	// back, and any makespan would read 0%).
	Efficiency    float64
	HasEfficiency bool
	Rules         []auditRule
	OK            bool // no rule was broken
}

// auditRule is one rule's line of the report.
type auditRule struct {
	Rule       throttle.Rule
	Peak       int
	PeakUsage  float64
	Violations int
	// FirstSeq names the earliest call that broke the rule (see
	// calls.seqs), and FirstAt is when it came; zero without violations.
	FirstSeq int64
	FirstAt  time.Time
}

// newAuditReport audits c against rules.
func newAuditReport(rules []throttle.Rule, jobs int, c *calls) *auditReport {
	rep := &auditReport{Format: c.format, Calls: len(c.times), Failed: c.failed, Jobs: jobs, OK: true}
	if n := len(c.times); n > 0 {
		cmpAt := func(a, b throttle.Call) int { return a.At.Compare(b.At) }
		rep.First, rep.Last = slices.MinFunc(c.times, cmpAt).At, slices.MaxFunc(c.times, cmpAt).At
		rep.Makespan = rep.Last.Sub(rep.First)
	}
	rep.MedianRuntime = median(c.runtimes)
	costs := make([]int, len(c.times))
	for i, call := range slices.SortedStableFunc(slices.Values(c.times), func(a, b throttle.Call) int { return a.At.Compare(b.At) }) {
		costs[i] = call.Cost
	}
	if at := throttle.Plan(rules, nil, costs, time.Unix(0, 0), jobs, rep.MedianRuntime); len(at) > 0 {
		rep.Fastest = at[len(at)-1].Sub(time.Unix(0, 0))
	}
	if rep.Fastest > 0 && rep.Makespan > 0 {
		rep.Efficiency, rep.HasEfficiency = rep.Fastest.Seconds()/rep.Makespan.Seconds(), true
	}
	for _, res := range throttle.Check(rules, c.times) {
		ar := auditRule{Rule: res.Rule, Peak: res.Peak, PeakUsage: res.PeakUsage, Violations: res.Violations}
		if res.First >= 0 {
			ar.FirstSeq, ar.FirstAt = c.seqs[res.First], c.times[res.First].At
			rep.OK = false
		}
		rep.Rules = append(rep.Rules, ar)
	}
	return rep
}

// median returns the median of ds (the mean of the middle two for an even
// count), or 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return s[m-1] + (s[m]-s[m-1])/2
}

// writeText writes the report as a small table for people.
func (rep *auditReport) writeText(w io.Writer) error {
	var b strings.Builder
	kind := "job log"
	seqHead := "FIRST SEQ"
	if rep.Format == formatTimestamps {
		kind, seqHead = "timestamps", "FIRST CALL"
	}
	fmt.Fprintf(&b, "%s %s: %d %s", kind, rep.Input, rep.Calls, plural(rep.Calls, "call"))
	if rep.Format == formatJobLog {
		fmt.Fprintf(&b, " (%d failed)", rep.Failed)
	}
	if rep.Calls > 0 {
		fmt.Fprintf(&b, ", %s to %s", formatInstant(rep.First), formatInstant(rep.Last))
	}
	b.WriteString("\n\n")

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "RULE\tPEAK\tUSAGE\tVIOLATIONS\t%s\n", seqHead)
	for _, r := range rep.Rules {
		first := "-"
		if r.Violations > 0 {
			first = fmt.Sprint(r.FirstSeq)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f%%\t%d\t%s\n", r.Rule, r.Peak, r.PeakUsage*100, r.Violations, first)
	}
	tw.Flush()
	b.WriteString("\n")

	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "makespan\t%s\n", roundDuration(rep.Makespan))
	model := "the rules alone"
	if rep.Jobs > 0 {
		model = fmt.Sprintf("the rules, -j %d, median job runtime %s", rep.Jobs, roundDuration(rep.MedianRuntime))
	}
	fmt.Fprintf(tw, "fastest\t%s\t(%s)\n", roundDuration(rep.Fastest), model)
	eff := "n/a"
	switch {
	case rep.HasEfficiency:
		eff = fmt.Sprintf("%.1f%%", rep.Efficiency*100)
	case rep.Calls == 0:
		eff = "n/a: no calls"
	case rep.Fastest == 0:
		what := "the rules allow"
		if rep.Jobs > 0 {
			what = fmt.Sprintf("the rules and -j %d allow", rep.Jobs)
		}
		all := fmt.Sprintf("all %d calls", rep.Calls)
		if rep.Calls == 1 {
			all = "the 1 call"
		}
		eff = fmt.Sprintf("n/a: %s %s at once, so they never held this run back", what, all)
	}
	fmt.Fprintf(tw, "efficiency\t%s\n", eff)
	tw.Flush()
	b.WriteString("\n")

	var broken []string
	for _, r := range rep.Rules {
		if r.Violations > 0 {
			broken = append(broken, fmt.Sprintf("%s (%d %s, first at %s %d)",
				r.Rule, r.Violations, plural(r.Violations, "violation"), strings.ToLower(seqHead[len("FIRST "):]), r.FirstSeq))
		}
	}
	if len(broken) == 0 {
		fmt.Fprintf(&b, "ok: every rule kept\n")
	} else {
		fmt.Fprintf(&b, "BROKEN: %s\n", strings.Join(broken, "; "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatInstant formats t in UTC to the microsecond.
func formatInstant(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

// auditJSONForm is the report's JSON form: always the same fields in the
// same order; durations in seconds, instants in RFC 3339 (UTC), and null
// for what is undefined.
type auditJSONForm struct {
	Input         string          `json:"input"`
	Format        string          `json:"format"`
	OK            bool            `json:"ok"`
	Calls         int             `json:"calls"`
	Failed        int             `json:"failed"`
	First         *string         `json:"first"`
	Last          *string         `json:"last"`
	Makespan      float64         `json:"makespan_seconds"`
	Fastest       float64         `json:"fastest_seconds"`
	Efficiency    *float64        `json:"efficiency"`
	Jobs          int             `json:"jobs"`
	MedianRuntime float64         `json:"median_runtime_seconds"`
	Rules         []auditRuleJSON `json:"rules"`
}

type auditRuleJSON struct {
	Rule       string  `json:"rule"`
	N          int     `json:"n"`
	Window     float64 `json:"window_seconds"`
	Cost       bool    `json:"cost"`
	Peak       int     `json:"peak"`
	PeakUsage  float64 `json:"peak_usage"`
	Violations int     `json:"violations"`
	FirstSeq   *int64  `json:"first_seq"`
	FirstAt    *string `json:"first_at"`
}

// writeJSON writes the report as one JSON object on one line.
func (rep *auditReport) writeJSON(w io.Writer) error {
	j := auditJSONForm{
		Input: rep.Input, Format: rep.Format, OK: rep.OK, Calls: rep.Calls, Failed: rep.Failed,
		Makespan: rep.Makespan.Seconds(), Fastest: rep.Fastest.Seconds(),
		Jobs: rep.Jobs, MedianRuntime: rep.MedianRuntime.Seconds(), Rules: []auditRuleJSON{},
	}
	if rep.Calls > 0 {
		first, last := formatInstant(rep.First), formatInstant(rep.Last)
		j.First, j.Last = &first, &last
	}
	if rep.HasEfficiency {
		e := round3(rep.Efficiency)
		j.Efficiency = &e
	}
	for _, r := range rep.Rules {
		rj := auditRuleJSON{
			Rule: r.Rule.String(), N: r.Rule.N, Window: r.Rule.Window.Seconds(), Cost: r.Rule.Cost,
			Peak: r.Peak, PeakUsage: round3(r.PeakUsage), Violations: r.Violations,
		}
		if r.Violations > 0 {
			seq, at := r.FirstSeq, formatInstant(r.FirstAt)
			rj.FirstSeq, rj.FirstAt = &seq, &at
		}
		j.Rules = append(j.Rules, rj)
	}
	if err := json.NewEncoder(w).Encode(j); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return nil
}
