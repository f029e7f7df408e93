package summary

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

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
	r := human.TruthfulRate(float64(s.Attempts)/max(s.Elapsed, time.Second).Seconds(), rules, func(r throttle.Rule) float64 {
		windows := max(math.Ceil(s.Elapsed.Seconds()/r.Window.Seconds()), 1)
		return float64(s.Attempts) / (windows * r.Window.Seconds())
	})
	unit, name := human.RateUnit(rules)
	return r * unit.Seconds(), name
}

// WriteText writes s for people.
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	rate, unit := s.shownRate()
	fmt.Fprintf(&b, "pace: %d ok, %d failed, %d retried in %s (%d %s, %s%s)",
		s.OK, s.Failed, s.Retried, human.Duration(s.Elapsed), s.Attempts, human.Plural(int(s.Attempts), "start"), human.Rate(rate), unit)
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
	mark := func(k BindingKind, r throttle.Rule) string {
		if s.Binding.Kind == k && (k != BindRule || s.Binding.Rule == r) {
			return "\tbinding"
		}
		return ""
	}
	for _, r := range s.Rules {
		fmt.Fprintf(tw, "  rule %s\tpeak %.0f%%\twaited %s (%d %s)%s\n",
			r.Rule, r.PeakUsage*100, human.Duration(r.WaitTime), r.Waits, human.Plural(int(r.Waits), "wait"), mark(BindRule, r.Rule))
	}
	if s.Jobs > 0 {
		fmt.Fprintf(tw, "  in flight\tpeak %d of %d%s\n", s.PeakInFlight, s.Jobs, mark(BindJobs, throttle.Rule{}))
	} else {
		fmt.Fprintf(tw, "  in flight\tpeak %d (no cap)\n", s.PeakInFlight)
	}
	if s.GlobalJobs > 0 {
		fmt.Fprintf(tw, "  fleet slots\t%d\twaited %s (%d %s)%s\n", s.GlobalJobs, human.Duration(s.SlotWaitTime), s.SlotWaits, human.Plural(int(s.SlotWaits), "wait"), mark(BindGlobalJobs, throttle.Rule{}))
	}
	if len(s.Rules) > 0 {
		how := "adaptive"
		if s.MarginFixed {
			how = "fixed"
		}
		fmt.Fprintf(tw, "  margin\t%s (%s)\n", human.Duration(s.Margin), how)
	}
	if s.Attempts > 0 {
		fmt.Fprintf(tw, "  job time\tp50 %s\tp95 %s\tmax %s\n", human.Duration(s.P50), human.Duration(s.P95), human.Duration(s.Max))
	}
	if st := s.Store; st != nil {
		per := 0.0
		if s.Attempts > 0 {
			per = float64(st.RoundTrips) / float64(s.Attempts)
		}
		// One detail cell, as the HTTP lines have, so that the store's
		// words do not widen the job-time columns.
		lost := ""
		if st.LeasesLost > 0 {
			// A job ran on after its lease ran out, while another process
			// could hold its slot: the cap may have been broken, which must
			// not go unsaid.
			lost = fmt.Sprintf(", %d fleet-wide %s lost (a job ran on after its lease ran out, and another process could take its slot: the fleet may have gone over --global-jobs %d)",
				st.LeasesLost, human.Plural(int(st.LeasesLost), "slot"), s.GlobalJobs)
		}
		fmt.Fprintf(tw, "  %s\t%d round %s (%.2f per start), %d failed%s\n", st.Name, st.RoundTrips, human.Plural(int(st.RoundTrips), "trip"), per, st.Failures, lost)
	}
	if s.HTTP != nil {
		s.HTTP.writeText(tw, s.Binding.Kind == BindServer)
	}
	if l := s.Learned; l != nil {
		fmt.Fprintf(tw, "  learned\t%s\n", learnedText(l))
	}
	if p := s.Proxy; p != nil {
		p.writeText(tw)
	}
	if s.JobLog != "" && len(s.Rules) > 0 {
		// The job log's header keeps the rules: plot needs no -r. A run
		// without rules wrote none there, and plot would refuse the log.
		svg := strings.TrimSuffix(s.JobLog, filepath.Ext(s.JobLog)) + ".svg"
		fmt.Fprintf(tw, "  picture\tpace plot -o %s %s\n", runner.Quote(svg), runner.Quote(s.JobLog))
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

// writeText writes the HTTP lines of the text summary.
func (h *HTTP) writeText(tw *tabwriter.Writer, binding bool) {
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
	fmt.Fprintf(tw, "  responses\t%s; %s kept\n", strings.Join(parts, ", "), human.Bytes(h.Bytes))
	if h.Pauses > 0 || binding {
		mark := ""
		if binding {
			mark = "  binding"
		}
		// The time is what admissions waited on the pauses: none may have
		// (a pause that ended before the next call was due).
		held := fmt.Sprintf("for %s", human.Duration(h.PauseWaitTime))
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
		if h.Pauses == 0 {
			// Binding without a pause: rules learned from its refusals
			// (the line below) held the run.
			fmt.Fprintf(tw, "  server\tno pause%s\n", mark)
			return
		}
		fmt.Fprintf(tw, "  server\tpaused admissions %d× %s (last: %s)%s\n", h.Pauses, held, last, mark)
	}
}

// writeText writes pace proxy's line of the text summary: the requests
// received and, if any, those sent nowhere.
func (p *Proxy) writeText(tw *tabwriter.Writer) {
	var parts []string
	for _, n := range []struct {
		n    int64
		what string
	}{{p.MaxWait, "answered 429 (the wait too long)"}, {p.Gone, "gone while waiting"}, {p.Refused, "answered 503 (stopping, or the store down)"},
		{p.Connect, "answered 405 (CONNECT: not a forward proxy)"}, {p.Stalled, "answered 408 (the body stalled)"},
		{p.DotPath, "answered 400 (a . or .. segment in the path)"}, {p.Asterisk, "answered 400 (* as the target of another method than OPTIONS)"},
		{p.BadBody, "answered 400 (a malformed body)"}} {
		if n.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n.n, n.what))
		}
	}
	unsent := ""
	if len(parts) > 0 {
		unsent = "; sent nowhere: " + strings.Join(parts, ", ")
	}
	fmt.Fprintf(tw, "  proxy\t%d %s received%s\n", p.Requests, human.Plural(int(p.Requests), "request"), unsent)
}

// learnedText says what pace learned: "server allowed about 5/s; pace
// slowed to 5/s after 4 refusals", "kept the server's 100/m
// (--rules-from-server)".
func learnedText(l *Learned) string {
	var parts []string
	if l.First != nil {
		s := fmt.Sprintf("server allowed about %s; pace slowed to it after %d %s", l.First, l.Refusals, human.Plural(l.Refusals, "refusal"))
		switch {
		case l.Now == nil:
			s += ", then went back to its own rules"
		case *l.Now != *l.First:
			s += fmt.Sprintf(", then to %s", l.Now)
		}
		parts = append(parts, s)
	} else if l.Refusals > 0 {
		parts = append(parts, fmt.Sprintf("%d %s; no tighter rule learned", l.Refusals, human.Plural(l.Refusals, "refusal")))
	}
	if len(l.Adopted) > 0 {
		parts = append(parts, fmt.Sprintf("kept the server's %s (--rules-from-server)", throttle.FormatRules(l.Adopted)))
	}
	return strings.Join(parts, "; ")
}
