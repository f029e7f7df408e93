package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pace-cli/pace/internal/outfile"
	"github.com/pace-cli/pace/internal/resume"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/learn"
)

// summarySchemaVersion is the version of the JSON summary's schema
// (docs/summary.md). It changes only when a field changes meaning or
// goes away; new fields may appear without a change.
const summarySchemaVersion = 1

// Summary is the final report of a run: what ran, how fast, and what held
// it back. It is made from the facts of a run by summarize, a pure
// function, and written as text or JSON.
type Summary struct {
	OK       int64 // items that succeeded
	Failed   int64 // items that failed, after their retries
	Retried  int64 // items that needed more than one attempt
	Attempts int64 // attempts started, retries included
	Skipped  int64 // items a --resume skipped because the job log has them done
	// NotStarted counts the items that never started because the run
	// ended early; NotStartedKnown is false when the input was not read
	// to its end and its length is unknown (then NotStarted is a floor).
	NotStarted      int64
	NotStartedKnown bool
	// Unstarted counts admitted attempts that could not start for lack
	// of pace's own resources and were tried again.
	Unstarted int64
	Elapsed   time.Duration
	Rate      float64 // attempts started per second of Elapsed
	Rules     []RuleSummary
	Binding   binding
	Jobs      int
	// PeakInFlight is the most jobs running at once in this process.
	PeakInFlight int
	GlobalJobs   int           // --global-jobs, 0 for none
	SlotWaits    int64         // waits for a fleet-wide slot
	SlotWaitTime time.Duration // time they took
	Margin       time.Duration // the margin in force at the end
	MarginFixed  bool          // --margin was given
	P50, P95     time.Duration // job durations
	Max          time.Duration
	FailedItems  []failedItem
	Interrupted  string // "SIGINT", "SIGTERM" or "SIGPIPE" (stdout closed) when the run was cut short
	// Stopped says why admissions stopped early, other than a signal: a
	// job log or output that could not be written, a backend failure.
	Stopped  string
	ExitCode int
	HTTP     *HTTPSummary // pace fetch's responses and server pauses
	Proxy    *ProxySummary
	Store    *throttle.StoreStats
	// Learned says what pace learned from the server: refusals, the rule
	// it inferred, the rules it adopted (--rules-from-server).
	Learned *learned
	// JobLog is the job log the run wrote, if any: the text summary says
	// how to draw it.
	JobLog string
	// Brief makes the text summary its first line alone: a short clean
	// run at a terminal (see briefSummary).
	Brief bool
}

// ProxySummary is pace proxy's part of a Summary: the requests it
// received, and those it answered itself without sending them upstream
// (which spent nothing and have no row in the job log).
type ProxySummary struct {
	Requests int64 // received
	MaxWait  int64 // answered 429 because the wait would pass --max-wait
	Gone     int64 // the client went away while its request waited
	Refused  int64 // answered 503: stopping, or the quota's store down
}

// RuleSummary is one rule's share of a Summary.
type RuleSummary struct {
	Rule      throttle.Rule
	PeakUsage float64 // highest fraction of N in any window
	Waits     int64   // admissions that waited on this rule
	WaitTime  time.Duration
}

// HTTPSummary is pace fetch's part of a Summary: responses by status over
// every attempt, and the pauses the server asked for.
type HTTPSummary struct {
	Status     map[string]int64 // responses by status code ("200", "429", ...)
	NoResponse int64            // attempts that got no response
	Conns      map[string]int64 // of those, by cause: refused, reset, dns, timeout, tls
	Bytes      int64            // body bytes kept (stdout or files)
	// Pauses counts the times the server stopped admissions (429/503,
	// rate-limit headers); PauseWaitTime is how long admissions waited
	// on them; PauseReason is the latest reason.
	Pauses        int64
	PauseWaitTime time.Duration
	PauseReason   string
}

// bindingKind says what kind of constraint held a run back.
type bindingKind int

const (
	bindNothing    bindingKind = iota // nothing held the run back
	bindRule                          // a rate rule
	bindJobs                          // -j, the jobs in flight in this process
	bindGlobalJobs                    // --global-jobs, the fleet's jobs in flight
	bindServer                        // pauses the server asked for
)

// binding names what held a run back: a kind, and the rule for bindRule.
type binding struct {
	kind bindingKind
	rule throttle.Rule
}

// String returns the binding as the summary shows it: the rule ("5/s"),
// "-j 4", "--global-jobs 8", "server", or "".
func (b binding) string(jobs, globalJobs int) string {
	switch b.kind {
	case bindRule:
		return b.rule.String()
	case bindJobs:
		return fmt.Sprintf("-j %d", jobs)
	case bindGlobalJobs:
		return fmt.Sprintf("--global-jobs %d", globalJobs)
	case bindServer:
		return "server"
	}
	return ""
}

// jsonKind names the kind in the JSON summary.
func (k bindingKind) jsonKind() string {
	return [...]string{"none", "rule", "jobs", "global_jobs", "server"}[k]
}

// bindingOf picks what held the run back: whatever admissions waited on
// longest (a rule, the fleet's slots, the server's pauses); failing that,
// a rule that was full; failing that, -j if it was reached. This is the
// one place binding is decided.
func bindingOf(st throttle.Stats, learnedWait time.Duration, peakInFlight, jobs int) binding {
	var b binding
	var longest time.Duration
	for _, r := range st.Rules {
		if r.WaitTime > longest {
			b, longest = binding{kind: bindRule, rule: r.Rule}, r.WaitTime
		}
	}
	if st.MaxInFlight > 0 && st.SlotWaitTime > longest {
		b, longest = binding{kind: bindGlobalJobs}, st.SlotWaitTime
	}
	if st.PauseWaitTime+learnedWait > longest {
		b = binding{kind: bindServer}
	}
	if b.kind != bindNothing {
		return b
	}
	peak := 0.0
	for _, r := range st.Rules {
		if r.PeakUsage >= 1 && r.PeakUsage > peak {
			b, peak = binding{kind: bindRule, rule: r.Rule}, r.PeakUsage
		}
	}
	if b.kind == bindNothing && jobs > 0 && peakInFlight >= jobs {
		b = binding{kind: bindJobs}
	}
	return b
}

// summarize turns what happened during a run into its summary and exit
// code. It reads nothing but f.
func summarize(f *runFacts) (*Summary, int) {
	t := f.tally
	s := &Summary{
		OK: t.OK, Failed: t.Failed, Retried: t.Retried, Attempts: t.Attempts, Skipped: f.skipped,
		Unstarted: t.NotStarted, Elapsed: f.elapsed, Jobs: f.jobs, PeakInFlight: t.PeakRunning,
		P50: t.P50, P95: t.P95, Max: t.Max, FailedItems: t.FailedItems,
		GlobalJobs: f.stats.MaxInFlight, SlotWaits: f.stats.SlotWaits, SlotWaitTime: f.stats.SlotWaitTime,
		Margin: f.stats.Margin, MarginFixed: f.opts.MarginSet, Interrupted: f.signal,
	}
	if f.jobLogErr == nil && t.Attempts > 0 {
		s.JobLog = f.opts.JobLog
	}
	if s.Elapsed > 0 {
		s.Rate = float64(s.Attempts) / s.Elapsed.Seconds()
	}
	for _, r := range f.stats.Rules {
		s.Rules = append(s.Rules, RuleSummary{Rule: r.Rule, PeakUsage: r.PeakUsage, Waits: r.Waits, WaitTime: r.WaitTime})
	}
	var learnedWait time.Duration
	if f.learned != nil {
		learnedWait = f.learned.WaitTime
		if f.learned.Refusals > 0 || len(f.learned.Adopted) > 0 {
			s.Learned = f.learned
		}
	}
	s.Binding = bindingOf(f.stats, learnedWait, t.PeakRunning, f.jobs)
	if f.stats.Store.Name != "" {
		store := f.stats.Store
		s.Store = &store
	}
	if t.HTTP {
		s.HTTP = &HTTPSummary{Status: t.Statuses, NoResponse: t.NoResponse, Conns: t.Conns, Bytes: t.Bytes,
			Pauses: f.stats.Pauses, PauseWaitTime: f.stats.PauseWaitTime, PauseReason: f.stats.PauseReason}
		if s.HTTP.Status == nil {
			s.HTTP.Status = map[string]int64{}
		}
	}
	// Items that never started: of the input's known length, or of what
	// was read when the input was not read to its end.
	done := t.OK + t.Failed
	switch {
	case f.total >= 0:
		s.NotStarted, s.NotStartedKnown = max(f.total-done, 0), true
	case f.read >= 0:
		s.NotStarted, s.NotStartedKnown = max(f.read-done, 0), f.readAll
	}

	s.Proxy = f.proxy
	code := ExitOK
	switch {
	case f.command != nil:
		code = *f.command // pace proxy -- CMD exits with CMD's status
		if f.signal != "" {
			s.Interrupted = f.signal
		}
	case f.limitErr != nil:
		code = backendExitCode(f.limitErr, ExitBackend)
		s.Stopped = "the limiter failed"
	case f.signal != "":
		code = ExitInterrupted
		if f.signal == "SIGTERM" {
			code = ExitTerminated
		}
	case f.pipe:
		s.Interrupted = "SIGPIPE"
		code = ExitBrokenPipe
	case f.halted != nil:
		code = f.halted.code
		s.Stopped = fmt.Sprintf("--halt %s after job %d", f.halted.spec, f.halted.seq)
	case f.readErr != nil:
		code = ExitFailed
		if t.Attempts == 0 && t.Failed == 0 {
			code = ExitUsage
		}
		if errors.Is(f.readErr, resume.ErrInputChanged) {
			code = ExitUsage
		}
		s.Stopped = "the input could not be read"
	case f.jobLogErr != nil:
		code = ExitFailed
		s.Stopped = "the job log could not be written"
	case f.outputErr != nil:
		code = ExitFailed
		s.Stopped = "job output could not be written"
	case t.Failed > 0:
		code = ExitFailed
	}
	s.ExitCode = code
	return s, code
}

// writeSummary writes s to w in the form --summary names.
func writeSummary(w io.Writer, form string, s *Summary) error {
	switch form {
	case summaryText:
		return s.writeText(w)
	case summaryJSON:
		return s.writeJSON(w)
	}
	return nil
}

// writeSummaryFile writes s as JSON to the file name as package outfile
// writes: a regular file whole (into a temporary file beside it, renamed
// over it once written), a FIFO or a device straight. ctx bounds the wait
// for a FIFO's reader.
func writeSummaryFile(ctx context.Context, name string, s *Summary) error {
	b, err := json.MarshalIndent(s.jsonForm(), "", "  ")
	if err != nil {
		return fmt.Errorf("--summary-file: %w", err)
	}
	if err := outfile.WriteFile(ctx, name, append(b, '\n')); err != nil {
		return fmt.Errorf("--summary-file %w", err)
	}
	return nil
}

// shownRate is the rate the text summary shows: the attempts per second
// of the run (over at least a second: one quick start is not a rate). A
// short run can start faster than a rule's N/W over its first window (a
// burst the rule allows), and that figure would read as the rule broken:
// then each rule's own measure is shown instead, the attempts over the
// whole windows the run spans, at most N/W since a rule admits at most N
// in each. It is in the unit of the rules (per second, minute or hour),
// as the progress shows it.
func (s *Summary) shownRate() (float64, string) {
	var rules []throttle.Rule
	for _, rs := range s.Rules {
		rules = append(rules, rs.Rule)
	}
	r := truthfulRate(float64(s.Attempts)/max(s.Elapsed, time.Second).Seconds(), rules, func(r throttle.Rule) float64 {
		windows := max(math.Ceil(s.Elapsed.Seconds()/r.Window.Seconds()), 1)
		return float64(s.Attempts) / (windows * r.Window.Seconds())
	})
	unit, name := rateUnit(rules)
	return r * unit.Seconds(), name
}

// truthfulRate returns rate (calls a second) if no count rule allows less,
// else the least of the rules' own measures (calls a second over each
// rule's window, which a rule keeps at most N/W): a rate shown is never
// above what a rule allows, however it is read.
func truthfulRate(rate float64, rules []throttle.Rule, measure func(throttle.Rule) float64) float64 {
	least, over := rate, false
	for _, r := range rules {
		if r.Cost || r.Window <= 0 {
			continue
		}
		if rate > float64(r.N)/r.Window.Seconds() {
			over = true
		}
		least = min(least, measure(r))
	}
	if over {
		return least
	}
	return rate
}

// writeText writes s for people.
func (s *Summary) writeText(w io.Writer) error {
	var b strings.Builder
	rate, unit := s.shownRate()
	fmt.Fprintf(&b, "pace: %d ok, %d failed, %d retried in %s (%d %s, %s%s)",
		s.OK, s.Failed, s.Retried, roundDuration(s.Elapsed), s.Attempts, plural(int(s.Attempts), "start"), formatRate(rate), unit)
	if s.Skipped > 0 {
		fmt.Fprintf(&b, ", %d skipped (done in the job log)", s.Skipped)
	}
	if s.NotStarted > 0 {
		more := ""
		if !s.NotStartedKnown {
			more = "+"
		}
		fmt.Fprintf(&b, ", %d%s not started", s.NotStarted, more)
	}
	if s.Interrupted != "" {
		fmt.Fprintf(&b, ", interrupted by %s", s.Interrupted)
	} else if s.Stopped != "" {
		fmt.Fprintf(&b, ", stopped: %s", s.Stopped)
	}
	b.WriteByte('\n')
	if s.Brief {
		_, err := io.WriteString(w, b.String())
		return err
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	mark := func(k bindingKind, r throttle.Rule) string {
		if s.Binding.kind == k && (k != bindRule || s.Binding.rule == r) {
			return "\tbinding"
		}
		return ""
	}
	for _, r := range s.Rules {
		fmt.Fprintf(tw, "  rule %s\tpeak %.0f%%\twaited %s (%d %s)%s\n",
			r.Rule, r.PeakUsage*100, roundDuration(r.WaitTime), r.Waits, plural(int(r.Waits), "wait"), mark(bindRule, r.Rule))
	}
	if s.Jobs > 0 {
		fmt.Fprintf(tw, "  in flight\tpeak %d of %d%s\n", s.PeakInFlight, s.Jobs, mark(bindJobs, throttle.Rule{}))
	} else {
		fmt.Fprintf(tw, "  in flight\tpeak %d (no cap)\n", s.PeakInFlight)
	}
	if s.GlobalJobs > 0 {
		fmt.Fprintf(tw, "  fleet slots\t%d\twaited %s (%d %s)%s\n", s.GlobalJobs, roundDuration(s.SlotWaitTime), s.SlotWaits, plural(int(s.SlotWaits), "wait"), mark(bindGlobalJobs, throttle.Rule{}))
	}
	if len(s.Rules) > 0 {
		how := "adaptive"
		if s.MarginFixed {
			how = "fixed"
		}
		fmt.Fprintf(tw, "  margin\t%s (%s)\n", roundDuration(s.Margin), how)
	}
	if s.Attempts > 0 {
		fmt.Fprintf(tw, "  job time\tp50 %s\tp95 %s\tmax %s\n", roundDuration(s.P50), roundDuration(s.P95), roundDuration(s.Max))
	}
	if st := s.Store; st != nil {
		per := 0.0
		if s.Attempts > 0 {
			per = float64(st.RoundTrips) / float64(s.Attempts)
		}
		// One detail cell, as the HTTP lines have, so that the store's
		// words do not widen the job-time columns.
		fmt.Fprintf(tw, "  %s\t%d round %s (%.2f per start), %d failed\n", st.Name, st.RoundTrips, plural(int(st.RoundTrips), "trip"), per, st.Failures)
	}
	if s.HTTP != nil {
		s.HTTP.writeText(tw, s.Binding.kind == bindServer)
	}
	if l := s.Learned; l != nil {
		fmt.Fprintf(tw, "  learned\t%s\n", learnedText(l))
	}
	if p := s.Proxy; p != nil {
		p.writeText(tw)
	}
	if s.JobLog != "" {
		// The job log's header keeps the rules: plot needs no -r.
		svg := strings.TrimSuffix(s.JobLog, filepath.Ext(s.JobLog)) + ".svg"
		fmt.Fprintf(tw, "  picture\tpace plot -o %s %s\n", runner.Quote(svg), runner.Quote(s.JobLog))
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

// writeText writes the HTTP lines of the text summary.
func (h *HTTPSummary) writeText(tw *tabwriter.Writer, binding bool) {
	codes := make([]string, 0, len(h.Status))
	for c := range h.Status {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%s ×%d", c, h.Status[c]))
	}
	if h.NoResponse > 0 {
		causes := make([]string, 0, len(h.Conns))
		for c, n := range h.Conns {
			causes = append(causes, fmt.Sprintf("%s ×%d", c, n))
		}
		slices.Sort(causes)
		detail := ""
		if len(causes) > 0 {
			detail = " (" + strings.Join(causes, ", ") + ")"
		}
		parts = append(parts, fmt.Sprintf("no response ×%d%s", h.NoResponse, detail))
	}
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	// Only the first column is aligned with the lines above: the rest is
	// one last cell, so that it does not widen their columns.
	fmt.Fprintf(tw, "  responses\t%s; %s kept\n", strings.Join(parts, ", "), formatBytes(h.Bytes))
	if h.Pauses > 0 || binding {
		mark := ""
		if binding {
			mark = "  binding"
		}
		// The time is what admissions waited on the pauses: none may have
		// (a pause that ended before the next call was due).
		held := fmt.Sprintf("for %s", roundDuration(h.PauseWaitTime))
		if h.PauseWaitTime <= 0 {
			held = "(no call waited on them)"
			if h.Pauses == 1 {
				held = "(no call waited on it)"
			}
		}
		last := strings.TrimPrefix(h.PauseReason, "server: ")
		if last == "" {
			last = "no reason given"
		}
		fmt.Fprintf(tw, "  server\tpaused admissions %d× %s (last: %s)%s\n", h.Pauses, held, last, mark)
	}
}

// writeText writes pace proxy's line of the text summary: the requests
// received and, if any, those sent nowhere.
func (p *ProxySummary) writeText(tw *tabwriter.Writer) {
	var parts []string
	for _, n := range []struct {
		n    int64
		what string
	}{{p.MaxWait, "answered 429 (--max-wait)"}, {p.Gone, "gone while waiting"}, {p.Refused, "answered 503 (stopping, or the store down)"}} {
		if n.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n.n, n.what))
		}
	}
	unsent := ""
	if len(parts) > 0 {
		unsent = "; sent nowhere: " + strings.Join(parts, ", ")
	}
	fmt.Fprintf(tw, "  proxy\t%d %s received%s\n", p.Requests, plural(int(p.Requests), "request"), unsent)
}

// learned is what pace learned from the server.
type learned = learn.Report

// learnedText says what pace learned: "server allowed about 5/s; pace
// slowed to 5/s after 4 refusals", "kept the server's 100/m
// (--rules-from-server)".
func learnedText(l *learned) string {
	var parts []string
	if l.First != nil {
		s := fmt.Sprintf("server allowed about %s; pace slowed to it after %d %s", l.First, l.Refusals, plural(l.Refusals, "refusal"))
		switch {
		case l.Now == nil:
			s += ", then went back to its own rules"
		case *l.Now != *l.First:
			s += fmt.Sprintf(", then to %s", l.Now)
		}
		parts = append(parts, s)
	} else if l.Refusals > 0 {
		parts = append(parts, fmt.Sprintf("%d %s; pace's rules were already tighter", l.Refusals, plural(l.Refusals, "refusal")))
	}
	if len(l.Adopted) > 0 {
		parts = append(parts, fmt.Sprintf("kept the server's %s (--rules-from-server)", throttle.FormatRules(l.Adopted)))
	}
	return strings.Join(parts, "; ")
}

// The JSON summary's form: see docs/summary.md. Durations are in seconds.
type (
	summaryJSONForm struct {
		SchemaVersion int               `json:"schema_version"`
		OK            int64             `json:"ok"`
		Failed        int64             `json:"failed"`
		Retried       int64             `json:"retried"`
		Attempts      int64             `json:"attempts"`
		Skipped       int64             `json:"skipped"`
		NotStarted    int64             `json:"not_started"`
		NotStartedAll bool              `json:"not_started_exact"`
		Unstarted     int64             `json:"unstarted_attempts"`
		Elapsed       float64           `json:"elapsed_seconds"`
		Rate          float64           `json:"rate_per_second"`
		Rules         []ruleJSONForm    `json:"rules"`
		Binding       bindingJSONForm   `json:"binding"`
		Jobs          int               `json:"jobs"`
		PeakInFlight  int               `json:"peak_in_flight"`
		GlobalJobs    *globalJobsJSON   `json:"global_jobs"`
		Margin        marginJSONForm    `json:"margin"`
		Duration      durationsJSONForm `json:"job_duration_seconds"`
		FailedItems   []failedItem      `json:"failed_items"`
		FailedMore    int64             `json:"failed_items_more"`
		Interrupted   *string           `json:"interrupted"`
		Stopped       *string           `json:"stopped"`
		ExitCode      int               `json:"exit_code"`
		HTTP          *httpJSONForm     `json:"http,omitempty"`
		Store         *storeJSONForm    `json:"store,omitempty"`
		Learned       *learnedJSONForm  `json:"learned,omitempty"`
		Proxy         *proxyJSONForm    `json:"proxy,omitempty"`
	}
	proxyJSONForm struct {
		Requests int64 `json:"requests"`
		MaxWait  int64 `json:"max_wait_429"`
		Gone     int64 `json:"gone_while_waiting"`
		Refused  int64 `json:"refused_503"`
	}
	learnedJSONForm struct {
		Refusals int      `json:"refusals"`
		Inferred *string  `json:"inferred_rule"`
		Now      *string  `json:"rule_at_end"`
		Adopted  []string `json:"adopted_rules"`
		WaitTime float64  `json:"wait_seconds"`
	}
	// ruleJSONForm is the rule object pace audit --json writes too.
	ruleJSONForm struct {
		Rule      string  `json:"rule"`
		N         int     `json:"n"`
		Window    float64 `json:"window_seconds"`
		Cost      bool    `json:"cost"`
		PeakUsage float64 `json:"peak_usage"`
		Waits     int64   `json:"waits"`
		WaitTime  float64 `json:"wait_seconds"`
	}
	bindingJSONForm struct {
		Kind string  `json:"kind"`
		Rule *string `json:"rule"`
		Text string  `json:"text"`
	}
	globalJobsJSON struct {
		Cap       int     `json:"cap"`
		SlotWaits int64   `json:"slot_waits"`
		SlotWait  float64 `json:"slot_wait_seconds"`
	}
	marginJSONForm struct {
		Seconds  float64 `json:"seconds"`
		Adaptive bool    `json:"adaptive"`
	}
	durationsJSONForm struct {
		P50 float64 `json:"p50"`
		P95 float64 `json:"p95"`
		Max float64 `json:"max"`
	}
	httpJSONForm struct {
		Status      map[string]int64 `json:"status"`
		NoResponse  int64            `json:"no_response"`
		Conns       map[string]int64 `json:"no_response_causes"`
		Bytes       int64            `json:"bytes"`
		Pauses      int64            `json:"server_pauses"`
		PauseWait   float64          `json:"paused_seconds"`
		PauseReason string           `json:"pause_reason"`
	}
	storeJSONForm struct {
		Name       string `json:"name"`
		RoundTrips int64  `json:"round_trips"`
		Failures   int64  `json:"failures"`
		LeasesLost int64  `json:"leases_lost"`
	}
)

// ruleJSON returns r's JSON object, shared with pace audit.
func ruleJSON(r throttle.Rule, peak float64, waits int64, wait time.Duration) ruleJSONForm {
	return ruleJSONForm{Rule: r.String(), N: r.N, Window: r.Window.Seconds(), Cost: r.Cost,
		PeakUsage: round3(peak), Waits: waits, WaitTime: wait.Seconds()}
}

// jsonForm returns s ready for encoding.
func (s *Summary) jsonForm() summaryJSONForm {
	j := summaryJSONForm{
		SchemaVersion: summarySchemaVersion,
		OK:            s.OK, Failed: s.Failed, Retried: s.Retried, Attempts: s.Attempts, Skipped: s.Skipped,
		NotStarted: s.NotStarted, NotStartedAll: s.NotStartedKnown, Unstarted: s.Unstarted,
		Elapsed: s.Elapsed.Seconds(), Rate: round3(s.Rate), Rules: []ruleJSONForm{},
		Binding:      bindingJSONForm{Kind: s.Binding.kind.jsonKind(), Text: s.Binding.string(s.Jobs, s.GlobalJobs)},
		Jobs:         s.Jobs,
		PeakInFlight: s.PeakInFlight,
		Margin:       marginJSONForm{Seconds: s.Margin.Seconds(), Adaptive: !s.MarginFixed},
		Duration:     durationsJSONForm{P50: s.P50.Seconds(), P95: s.P95.Seconds(), Max: s.Max.Seconds()},
		FailedItems:  s.FailedItems,
		FailedMore:   max(s.Failed-int64(len(s.FailedItems)), 0),
		ExitCode:     s.ExitCode,
	}
	if j.FailedItems == nil {
		j.FailedItems = []failedItem{}
	}
	if s.Binding.kind == bindRule {
		r := s.Binding.rule.String()
		j.Binding.Rule = &r
	}
	for _, r := range s.Rules {
		j.Rules = append(j.Rules, ruleJSON(r.Rule, r.PeakUsage, r.Waits, r.WaitTime))
	}
	if s.GlobalJobs > 0 {
		j.GlobalJobs = &globalJobsJSON{Cap: s.GlobalJobs, SlotWaits: s.SlotWaits, SlotWait: s.SlotWaitTime.Seconds()}
	}
	if s.Interrupted != "" {
		j.Interrupted = &s.Interrupted
	}
	if s.Stopped != "" {
		j.Stopped = &s.Stopped
	}
	if h := s.HTTP; h != nil {
		j.HTTP = &httpJSONForm{Status: h.Status, NoResponse: h.NoResponse, Conns: h.Conns, Bytes: h.Bytes,
			Pauses: h.Pauses, PauseWait: h.PauseWaitTime.Seconds(), PauseReason: h.PauseReason}
		if j.HTTP.Conns == nil {
			j.HTTP.Conns = map[string]int64{}
		}
	}
	if l := s.Learned; l != nil {
		lj := &learnedJSONForm{Refusals: l.Refusals, Adopted: []string{}, WaitTime: l.WaitTime.Seconds()}
		if l.First != nil {
			r := l.First.String()
			lj.Inferred = &r
		}
		if l.Now != nil {
			r := l.Now.String()
			lj.Now = &r
		}
		for _, r := range l.Adopted {
			lj.Adopted = append(lj.Adopted, r.String())
		}
		j.Learned = lj
	}
	if p := s.Proxy; p != nil {
		j.Proxy = &proxyJSONForm{Requests: p.Requests, MaxWait: p.MaxWait, Gone: p.Gone, Refused: p.Refused}
	}
	if st := s.Store; st != nil {
		j.Store = &storeJSONForm{Name: st.Name, RoundTrips: st.RoundTrips, Failures: st.Failures, LeasesLost: st.LeasesLost}
	}
	return j
}

// writeJSON writes s as one JSON object on one line.
func (s *Summary) writeJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(s.jsonForm())
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// formatRate writes a rate with about three significant digits.
func formatRate(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 10:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.2f", r)
}

// roundDuration rounds d for display: to 1ms under 10s, else to 100ms,
// and whole seconds past a minute.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < 10*time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// formatBytes writes n with a binary unit.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// plural returns word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
