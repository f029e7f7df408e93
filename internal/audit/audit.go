// Package audit checks a record of calls (a job log, or timestamps one a
// line) against rate rules: the peak and the violations of each rule, and
// the fastest makespan the rules allow for as many calls, to compare with
// the one the record shows. It is pace audit's analysis and its report in
// text and JSON; the command only opens the input and picks the form.
package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/throttle"
)

// Input formats that pace audit reads.
const (
	FormatJobLog     = "joblog"
	FormatTimestamps = "timestamps"
)

// Calls is what an audit knows about the calls of a run, as Read reads
// them.
type Calls struct {
	Format string          // FormatJobLog or FormatTimestamps
	Rules  []throttle.Rule // the rules a job log's header names
	Times  []throttle.Call
	// Seqs[i] names Times[i] in the report: the job log's Seq, or the
	// position among the timestamps (from 1).
	Seqs []int64
	// Runtimes are the jobs' runtimes; empty for timestamps.
	Runtimes []time.Duration
	Failed   int // rows with a non-zero Exitval or a Signal
}

// MaxCalls bounds the calls pace audit holds (Read's maxCalls), and so its memory
// (about 200 bytes a call while it audits them: 2 GB at the cap): the input is read one
// line at a time and a line is at most joblog.MaxLine long, so no input,
// however long (an endless pipe, /dev/zero), grows it further.
const MaxCalls = 10_000_000

// ErrTooManyCalls is returned by Read for an input of more calls
// than it holds.
var ErrTooManyCalls = errors.New("too many calls")

// Read reads a job log or a timestamp file, telling them apart by
// the first non-blank line: a job log's lines have tabs. It holds at most
// maxCalls calls: more are an error wrapping ErrTooManyCalls. Other
// errors are *joblog.LineError values quoting the bad line, or read
// errors.
func Read(r io.Reader, maxCalls int) (*Calls, error) {
	c := &Calls{}
	sc, err := joblog.Scan(r, func(format joblog.Format, e joblog.Entry) error {
		if len(c.Times) >= maxCalls {
			return fmt.Errorf("%w: more than %d, the most pace audit reads; audit the file in parts (split -l %d)",
				ErrTooManyCalls, maxCalls, maxCalls)
		}
		c.Times = append(c.Times, throttle.Call{At: e.Start, Cost: e.Cost()})
		c.Seqs = append(c.Seqs, int64(e.Seq))
		if format == joblog.JobLog {
			// A negative runtime (a clock stepped back during the job)
			// is a job of no time that can be told.
			c.Runtimes = append(c.Runtimes, max(e.Runtime, 0))
			if e.Failed() {
				c.Failed++
			}
		}
		return nil
	})
	if p := sc.CutShort; err == nil && p != nil {
		err = &joblog.LineError{Kind: "job log", Line: p.Line, Text: p.Text, Msg: "the last row is cut short"}
	}
	if err != nil {
		var le *joblog.LineError
		if !errors.As(err, &le) && !errors.Is(err, ErrTooManyCalls) {
			err = fmt.Errorf("read: %w", err)
		}
		return nil, err
	}
	c.Format, c.Rules = FormatTimestamps, nil
	if sc.Format == joblog.JobLog {
		c.Format, c.Rules = FormatJobLog, sc.Rules
	}
	return c, nil
}

// Report is the result of an audit: New makes it, WriteText and
// WriteJSON write it.
type Report struct {
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
	Rules         []RuleReport
	OK            bool // no rule was broken
}

// RuleReport is one rule's line of the report.
type RuleReport struct {
	Rule       throttle.Rule
	Peak       int
	PeakUsage  float64
	Violations int
	// FirstSeq names the earliest call that broke the rule (see
	// Calls.Seqs), and FirstAt is when it came; zero without violations.
	FirstSeq int64
	FirstAt  time.Time
}

// New audits c against rules.
func New(rules []throttle.Rule, jobs int, c *Calls) *Report {
	rep := &Report{Format: c.Format, Calls: len(c.Times), Failed: c.Failed, Jobs: jobs, OK: true}
	if n := len(c.Times); n > 0 {
		cmpAt := func(a, b throttle.Call) int { return a.At.Compare(b.At) }
		rep.First, rep.Last = slices.MinFunc(c.Times, cmpAt).At, slices.MaxFunc(c.Times, cmpAt).At
		rep.Makespan = rep.Last.Sub(rep.First)
	}
	rep.MedianRuntime = median(c.Runtimes)
	costs := make([]int, len(c.Times))
	for i, call := range slices.SortedStableFunc(slices.Values(c.Times), func(a, b throttle.Call) int { return a.At.Compare(b.At) }) {
		costs[i] = call.Cost
	}
	if at := throttle.Plan(rules, nil, costs, time.Unix(0, 0), jobs, rep.MedianRuntime); len(at) > 0 {
		rep.Fastest = at[len(at)-1].Sub(time.Unix(0, 0))
	}
	if rep.Fastest > 0 && rep.Makespan > 0 {
		rep.Efficiency, rep.HasEfficiency = rep.Fastest.Seconds()/rep.Makespan.Seconds(), true
	}
	for _, res := range throttle.Check(rules, c.Times) {
		ar := RuleReport{Rule: res.Rule, Peak: res.Peak, PeakUsage: res.PeakUsage, Violations: res.Violations}
		if res.First >= 0 {
			ar.FirstSeq, ar.FirstAt = c.Seqs[res.First], c.Times[res.First].At
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

// WriteText writes the report as a small table for people.
func (rep *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	kind := "job log"
	seqHead := "FIRST SEQ"
	if rep.Format == FormatTimestamps {
		kind, seqHead = "timestamps", "FIRST CALL"
	}
	fmt.Fprintf(&b, "%s %s: %d %s", kind, rep.Input, rep.Calls, human.Plural(rep.Calls, "call"))
	if rep.Format == FormatJobLog {
		fmt.Fprintf(&b, " (%d failed)", rep.Failed)
	}
	if rep.Calls > 0 {
		fmt.Fprintf(&b, ", %s to %s", human.Instant(rep.First), human.Instant(rep.Last))
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
	fmt.Fprintf(tw, "makespan\t%s\n", human.Duration(rep.Makespan))
	model := "the rules alone"
	if rep.Jobs > 0 {
		model = fmt.Sprintf("the rules, -j %d, median job runtime %s", rep.Jobs, human.Duration(rep.MedianRuntime))
	}
	fmt.Fprintf(tw, "fastest\t%s\t(%s)\n", human.Duration(rep.Fastest), model)
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
				r.Rule, r.Violations, human.Plural(r.Violations, "violation"), strings.ToLower(seqHead[len("FIRST "):]), r.FirstSeq))
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

// jsonForm is the report's JSON form: always the same fields in the
// same order; durations in seconds, instants in RFC 3339 (UTC), and null
// for what is undefined.
type jsonForm struct {
	Input         string     `json:"input"`
	Format        string     `json:"format"`
	OK            bool       `json:"ok"`
	Calls         int        `json:"calls"`
	Failed        int        `json:"failed"`
	First         *string    `json:"first"`
	Last          *string    `json:"last"`
	Makespan      float64    `json:"makespan_seconds"`
	Fastest       float64    `json:"fastest_seconds"`
	Efficiency    *float64   `json:"efficiency"`
	Jobs          int        `json:"jobs"`
	MedianRuntime float64    `json:"median_runtime_seconds"`
	Rules         []ruleJSON `json:"rules"`
}

type ruleJSON struct {
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

// WriteJSON writes the report as one JSON object on one line.
func (rep *Report) WriteJSON(w io.Writer) error {
	j := jsonForm{
		Input: rep.Input, Format: rep.Format, OK: rep.OK, Calls: rep.Calls, Failed: rep.Failed,
		Makespan: rep.Makespan.Seconds(), Fastest: rep.Fastest.Seconds(),
		Jobs: rep.Jobs, MedianRuntime: rep.MedianRuntime.Seconds(), Rules: []ruleJSON{},
	}
	if rep.Calls > 0 {
		first, last := human.Instant(rep.First), human.Instant(rep.Last)
		j.First, j.Last = &first, &last
	}
	if rep.HasEfficiency {
		e := human.Round3(rep.Efficiency)
		j.Efficiency = &e
	}
	for _, r := range rep.Rules {
		rj := ruleJSON{
			Rule: r.Rule.String(), N: r.Rule.N, Window: r.Rule.Window.Seconds(), Cost: r.Rule.Cost,
			Peak: r.Peak, PeakUsage: human.Round3(r.PeakUsage), Violations: r.Violations,
		}
		if r.Violations > 0 {
			seq, at := r.FirstSeq, human.Instant(r.FirstAt)
			rj.FirstSeq, rj.FirstAt = &seq, &at
		}
		j.Rules = append(j.Rules, rj)
	}
	if err := json.NewEncoder(w).Encode(j); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return nil
}
