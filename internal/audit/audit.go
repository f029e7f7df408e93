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
	// RulesErr is the error of a header naming rules this pace cannot
	// read (joblog.Scanned.RulesErr): for a caller without rules of its own.
	RulesErr error
	Times    []throttle.Call
	// Seqs[i] names Times[i] in the report: the job log's Seq, or the
	// position among the timestamps (from 1).
	Seqs []int64
	// Runtimes are the jobs' runtimes; empty for timestamps. A hop row
	// (joblog.Entry.Hop: a redirect followed, a request sent again) is a
	// call its job made within its own runtime, so none of its own.
	Runtimes []time.Duration
	Failed   int // rows with a non-zero Exitval or a Signal
	// CutShort is a job log's last row when a pace killed as it wrote it
	// left it cut short, or nil. Its call is in Times when it holds its
	// Starttime whole (at its cost if it holds its Send, else 1); its
	// runtime and failure count where it holds them.
	CutShort *joblog.Partial
	// StandIns are the rows that stand in for rows cut short (Exitval -2,
	// see joblog.Partial.StandIn), in file order, as what those rows held:
	// each call counts as CutShort's does. Their failure is not counted:
	// a stand-in does not keep it.
	StandIns []*joblog.Partial
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
		if len(c.Times)+len(c.StandIns) >= maxCalls {
			return fmt.Errorf("%w: more than %d, the most pace audit reads; audit the file in parts (split -l %d)",
				ErrTooManyCalls, maxCalls, maxCalls)
		}
		if p := e.Partial(); format == joblog.JobLog && p != nil {
			c.StandIns = append(c.StandIns, p)
			c.addCut(p)
			return nil
		}
		c.Times = append(c.Times, throttle.Call{At: e.Start, Cost: e.Cost()})
		c.Seqs = append(c.Seqs, int64(e.Seq))
		if format == joblog.JobLog && !e.Hop() {
			// A negative runtime (a clock stepped back during the job)
			// is a job of no time that can be told.
			c.Runtimes = append(c.Runtimes, max(e.Runtime, 0))
			if e.Failed() {
				c.Failed++
			}
		}
		return nil
	})
	if err != nil {
		var le *joblog.LineError
		if !errors.As(err, &le) && !errors.Is(err, ErrTooManyCalls) {
			err = fmt.Errorf("read: %w", err)
		}
		return nil, err
	}
	c.Format, c.Rules = FormatTimestamps, nil
	if sc.Format == joblog.JobLog {
		c.Format, c.Rules, c.RulesErr = FormatJobLog, sc.Rules, sc.RulesErr
	}
	if p := sc.CutShort; p != nil {
		c.CutShort = p
		c.addCut(p)
	}
	return c, nil
}

// addCut adds the call of p, a row cut short: at its Starttime if it
// holds it (at its cost if it holds it, else 1), its runtime and its
// failure where it holds them.
func (c *Calls) addCut(p *joblog.Partial) {
	e := p.Entry
	if p.HasStart() {
		c.Times = append(c.Times, throttle.Call{At: e.Start, Cost: e.Cost()})
		c.Seqs = append(c.Seqs, int64(e.Seq))
	}
	if p.HasRuntime() && !e.Hop() {
		c.Runtimes = append(c.Runtimes, max(e.Runtime, 0))
	}
	if p.HasExit() && e.Failed() {
		c.Failed++
	}
}

// cuts returns the rows cut short whose calls the record holds: the rows
// standing in for them, and the last row cut short.
func (c *Calls) cuts() []*joblog.Partial {
	if c.CutShort == nil {
		return c.StandIns
	}
	return append(slices.Clip(c.StandIns), c.CutShort)
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
	// OK says that every rule was kept: none broken, none unproven.
	OK bool
	// CutShort is the input's last row when it was cut short
	// (Calls.CutShort), or nil, and StandIns the rows standing in for
	// rows cut short (Calls.StandIns); a rule their calls may have broken
	// unseen is Unproven.
	CutShort *joblog.Partial
	StandIns []*joblog.Partial
	// Redact, if not nil, hides the credentials of a Command column
	// (joblog.ShownRow) wherever the report quotes a row cut short.
	Redact func(string) string
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
	// Unproven says that no call was seen to break the rule, but the
	// call of the last row, cut short, may have: its Starttime is cut
	// off and the rule had no room for one more call in some window,
	// or its cost (Send) is cut off and the rule is a cost rule.
	Unproven bool
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
	rep.CutShort, rep.StandIns = c.CutShort, c.StandIns
	unplaced, costUnknown := 0, false
	for _, p := range c.cuts() {
		if !p.HasStart() {
			unplaced++
		}
		costUnknown = costUnknown || !p.HasCost()
	}
	for i, r := range rep.Rules {
		if r.Violations == 0 && mayBreak(r, unplaced, costUnknown) {
			rep.Rules[i].Unproven, rep.OK = true, false
		}
	}
	return rep
}

// mayBreak reports whether the calls of rows cut short may have broken
// the rule of r, which the other calls kept: unplaced of them lack their
// Starttime, and some lack their cost when costUnknown. A call that
// cannot be placed in time may have come anywhere: unplaced calls break
// no rule whose peak leaves room for that many more, since a window
// holding them holds at most the peak of the others besides. Their cost
// is unknown, and so is that of a call placed without its Send: any cost
// rule may have been broken.
func mayBreak(r RuleReport, unplaced int, costUnknown bool) bool {
	if r.Rule.Cost {
		return unplaced > 0 || costUnknown
	}
	return r.Peak+unplaced > r.Rule.N
}

// Broken reports whether a call was seen to break a rule.
func (rep *Report) Broken() bool {
	return slices.ContainsFunc(rep.Rules, func(r RuleReport) bool { return r.Violations > 0 })
}

// unproven returns the rules that may have been broken unseen, or "".
func (rep *Report) unproven() string {
	var rules []string
	for _, r := range rep.Rules {
		if r.Unproven {
			rules = append(rules, r.Rule.String())
		}
	}
	return strings.Join(rules, ", ")
}

// cuts returns the rows cut short whose calls the report counts
// (Calls.cuts).
func (rep *Report) cuts() []*joblog.Partial {
	return (&Calls{CutShort: rep.CutShort, StandIns: rep.StandIns}).cuts()
}

// standInLine says, for the text report, how the rows standing in for
// rows cut short were taken; "" when there are none.
func (rep *Report) standInLine() string {
	n := len(rep.StandIns)
	if n == 0 {
		return ""
	}
	counted, costless := 0, 0
	for _, p := range rep.StandIns {
		if p.HasStart() {
			counted++
			if !p.HasCost() {
				costless++
			}
		}
	}
	var parts []string
	if counted > 0 {
		whose := "their"
		if counted == 1 {
			whose = "its"
		}
		part := fmt.Sprintf("%d counted at %s Starttime", counted, whose)
		if costless > 0 && slices.ContainsFunc(rep.Rules, func(r RuleReport) bool { return r.Rule.Cost }) {
			part += fmt.Sprintf(", %d of unknown cost (Send)", costless)
		}
		parts = append(parts, part)
	}
	if unplaced := n - counted; unplaced > 0 {
		parts = append(parts, fmt.Sprintf("%d with no Starttime: not counted, time unknown", unplaced))
	}
	what := "1 row standing in for a row"
	if n > 1 {
		what = fmt.Sprintf("%d rows standing in for rows", n)
	}
	return fmt.Sprintf("%s cut short (Exitval -2): %s", what, strings.Join(parts, "; "))
}

// costMatters reports whether the last row, cut short, lacks a cost that
// a cost rule needs.
func (rep *Report) costMatters() bool {
	return !rep.CutShort.HasCost() && slices.ContainsFunc(rep.Rules, func(r RuleReport) bool { return r.Rule.Cost })
}

// CutNote says, for stderr, what the last row cut short holds and how the
// audit took it; "" when no row was cut short.
func (rep *Report) CutNote() string {
	p := rep.CutShort
	if p == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "line %d: the last row is incomplete (pace was stopped while writing it): %q, where a row has 9 tab-separated fields and a line break; ",
		p.Line, joblog.ShownRow(p.Text, rep.Redact))
	unproven := rep.unproven()
	switch {
	case p.HasStart():
		fmt.Fprintf(&b, "it holds its Starttime: its call is counted, admitted at %s", human.Instant(p.Entry.Start))
		if rep.costMatters() {
			b.WriteString(", of cost 1 at least: its Send (the call's cost) is cut off")
		}
	default:
		b.WriteString("its Starttime is cut off: its call is not counted, and may have come at any time")
		if unproven == "" {
			b.WriteString(", but every rule had room for one more call in any window, so it broke none")
		}
	}
	if unproven != "" {
		fmt.Fprintf(&b, "; it may have broken %s, which the log cannot tell: no verdict", unproven)
	}
	return b.String()
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
	b.WriteString("\n")
	if p := rep.CutShort; p != nil {
		b.WriteString("last row cut short (pace stopped while writing it): ")
		switch {
		case p.HasStart() && rep.costMatters():
			b.WriteString("counted at its Starttime, of unknown cost (its Send is cut off)\n")
		case p.HasStart():
			b.WriteString("counted at its Starttime\n")
		default:
			b.WriteString("its Starttime is cut off: not counted, time unknown\n")
		}
	}
	if line := rep.standInLine(); line != "" {
		b.WriteString(line + "\n")
	}
	b.WriteString("\n")

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
	if len(broken) > 0 {
		fmt.Fprintf(&b, "BROKEN: %s\n", strings.Join(broken, "; "))
	}
	if u := rep.unproven(); u != "" {
		lacks := "cost (Send)"
		if slices.ContainsFunc(rep.cuts(), func(p *joblog.Partial) bool { return !p.HasStart() }) {
			lacks = "Starttime"
		}
		it := "it"
		if strings.Contains(u, ",") {
			it = "them"
		}
		who := "the last row, cut short, lacks its %s: its call"
		switch {
		case len(rep.StandIns) == 1 && rep.CutShort == nil:
			who = "the row standing in for a row cut short (Exitval -2) lacks its %s: its call"
		case len(rep.StandIns) > 0:
			who = "rows cut short, or standing in for rows cut short (Exitval -2), lack their %s: their calls"
		}
		fmt.Fprintf(&b, "UNPROVEN: %s ("+who+" may have broken %s)\n", u, lacks, it)
	}
	if rep.OK {
		fmt.Fprintf(&b, "ok: every rule kept\n")
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
	CutShort      *cutJSON   `json:"cut_short"`
	StandIns      []standIn  `json:"stand_ins"`
}

// standIn is a row standing in for a row cut short: its Seq (null when
// the row was cut in it), the row as cut (as far as the stand-in quotes
// it), and whether its call is counted (the row held its Starttime).
type standIn struct {
	Seq     *int   `json:"seq"`
	Row     string `json:"row"`
	Counted bool   `json:"counted"`
}

// cutJSON is the last row cut short: its line, the row as cut, its Seq
// (null when cut in it), and whether its call is counted (it holds its
// Starttime).
type cutJSON struct {
	Line    int    `json:"line"`
	Row     string `json:"row"`
	Seq     *int   `json:"seq"`
	Counted bool   `json:"counted"`
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
	Unproven   bool    `json:"unproven"`
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
			Peak: r.Peak, PeakUsage: human.Round3(r.PeakUsage), Violations: r.Violations, Unproven: r.Unproven,
		}
		if r.Violations > 0 {
			seq, at := r.FirstSeq, human.Instant(r.FirstAt)
			rj.FirstSeq, rj.FirstAt = &seq, &at
		}
		j.Rules = append(j.Rules, rj)
	}
	j.StandIns = []standIn{}
	for _, p := range rep.StandIns {
		si := standIn{Row: joblog.ShownRow(p.Text, rep.Redact), Counted: p.HasStart()}
		if seq := p.Entry.Seq; seq > 0 {
			si.Seq = &seq
		}
		j.StandIns = append(j.StandIns, si)
	}
	if p := rep.CutShort; p != nil {
		j.CutShort = &cutJSON{Line: p.Line, Row: joblog.ShownRow(p.Text, rep.Redact), Counted: p.HasStart()}
		if seq := p.Entry.Seq; seq > 0 {
			j.CutShort.Seq = &seq
		}
	}
	if err := json.NewEncoder(w).Encode(j); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	return nil
}
