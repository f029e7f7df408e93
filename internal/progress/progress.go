// Package progress computes what pace's progress shows while a run goes,
// from what it counted (summary.Snapshot) and the backend's statistics:
// the count, a rate over a recent window in one unit for the whole run
// (never above what a rule allows), what admissions wait on, and an ETA
// planned under the rules (throttle.Plan). Drawing it, as a bar on a
// terminal or as status lines, is the caller's.
package progress

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/internal/summary"
	"github.com/pace-cli/pace/throttle"
)

// rateWindow is the span over which the rate shown is measured: recent
// enough to follow the run, long enough to smooth over one window's stall.
const rateWindow = 10 * time.Second

// Model computes what the display shows: counts, a rate over a recent
// window in one unit for the whole run, what admissions wait on, an ETA.
// New makes one; Status gives the status at an instant. It keeps the
// recent samples the rate is measured over, so it is not safe for
// concurrent use: one goroutine draws.
type Model struct {
	rules   []throttle.Rule
	jobs    int
	unit    time.Duration // the rate's unit: a second, minute or hour
	unitStr string
	samples []sample // recent (time, done) pairs, oldest first
	// Extra, if set, returns the rules learned from the server, which
	// hold calls back as the user's do.
	Extra func() []throttle.Rule
	// Waiting, if set, returns how many calls wait for their admission
	// (pace proxy's requests).
	Waiting func() int64
	// The latest ETA, recomputed at most once a second.
	etaAt   time.Time
	etaLeft int64
	etaEnd  time.Time
}

// sample is the items done at an instant.
type sample struct {
	at   time.Time
	done int64
}

// New makes the progress of a run under rules with jobs at once.
func New(rules []throttle.Rule, jobs int) *Model {
	p := &Model{rules: rules, jobs: jobs}
	p.unit, p.unitStr = human.RateUnit(rules)
	return p
}

// rate returns the rate shown, per unit: items done over the recent
// window (over at least a second, so that two quick items are not read
// as a burst rate). Where that is above a count rule's N/W (a burst the
// rule allows, which would read as the rule broken), it is each rule's
// calls in its window now over the window instead (st's Used: the calls
// of earlier runs and of a fleet count too), never above N/W.
func (p *Model) rate(now time.Time, done int64, st throttle.Stats) float64 {
	p.samples = append(p.samples, sample{now, done})
	for len(p.samples) > 2 && now.Sub(p.samples[1].at) >= rateWindow {
		p.samples = p.samples[1:]
	}
	first := p.samples[0]
	span := max(now.Sub(first.at), time.Second)
	r := float64(done-first.done) / span.Seconds()
	rules := make([]throttle.Rule, len(st.Rules))
	used := make(map[throttle.Rule]int, len(st.Rules))
	for i, rs := range st.Rules {
		rules[i] = rs.Rule
		used[rs.Rule] = rs.Used
	}
	r = human.TruthfulRate(r, rules, func(rule throttle.Rule) float64 { return float64(used[rule]) / rule.Window.Seconds() })
	return r * p.unit.Seconds()
}

// Status is the status in parts: "120/1000 done, 3 failed, 4.9/s,
// waiting on 5/s, ETA 3m20s". A narrow terminal drops the rate first,
// then the rule, the ETA and the failures; never the count.
func (p *Model) Status(now time.Time, done int64, t summary.Snapshot, st throttle.Stats, total int64) []Part {
	parts := []Part{{Text: CountText(done, total)}}
	if t.Failed > 0 {
		parts = append(parts, Part{fmt.Sprintf("%d failed", t.Failed), 1})
	}
	if p.Waiting != nil {
		parts = append(parts, Part{fmt.Sprintf("%d waiting", p.Waiting()), 2})
	}
	parts = append(parts, Part{human.Rate(p.rate(now, done, st)) + p.unitStr, 4})
	switch b := st.Busiest(); {
	case st.PausedUntil.After(now):
		parts = append(parts, Part{fmt.Sprintf("paused by the server for %s", human.ETA(st.PausedUntil.Sub(now))), 3})
	case b >= 0 && st.Rules[b].Usage >= 1:
		parts = append(parts, Part{fmt.Sprintf("waiting on %s", st.Rules[b].Rule), 3})
	case b >= 0:
		parts = append(parts, Part{fmt.Sprintf("%s at %.0f%%", st.Rules[b].Rule, st.Rules[b].Usage*100), 3})
	}
	if total >= 0 && done < total {
		if eta, ok := p.eta(now, total-t.ItemsStarted, t, st.PausedUntil); ok {
			parts = append(parts, Part{"ETA " + human.ETA(eta), 2})
		}
	}
	return parts
}

// CountText is the status's first part: "120/1000 done", or "120 done"
// while the total is unknown (-1).
func CountText(done, total int64) string {
	if total >= 0 {
		return fmt.Sprintf("%d/%d done", done, total)
	}
	return fmt.Sprintf("%d done", done)
}

// Text is the status as one line.
func (p *Model) Text(now time.Time, done int64, t summary.Snapshot, st throttle.Stats, total int64) string {
	return Join(p.Status(now, done, t, st, total))
}

// etaSimulated bounds the calls the ETA simulates; past that it scales.
const etaSimulated = 20000

// eta estimates how long the run has left with left items still to start:
// the fastest legal schedule for them after the admissions already made
// (throttle.Plan, so that a daily quota spent early holds the rest back),
// plus a job's mean runtime. The plan starts when a server's pause ends,
// and keeps the rules pace learned from the server (Extra) as well.
func (p *Model) eta(now time.Time, left int64, t summary.Snapshot, pausedUntil time.Time) (time.Duration, bool) {
	if left <= 0 {
		return t.P50, true
	}
	if p.etaAt.Add(time.Second).After(now) && p.etaLeft == left {
		return max(p.etaEnd.Sub(now), 0), true
	}
	n := min(left, etaSimulated)
	costs := make([]int, n)
	for i := range costs {
		costs[i] = max(t.MeanCost, 1)
	}
	rules, start := p.rules, now
	if p.Extra != nil {
		rules = append(slices.Clone(rules), p.Extra()...)
	}
	if pausedUntil.After(now) {
		start = pausedUntil
	}
	plan := throttle.Plan(rules, t.Recent, costs, start, p.jobs, t.P50)
	last := plan[len(plan)-1].Sub(now)
	if n < left {
		last = time.Duration(float64(last) * float64(left) / float64(n))
	}
	p.etaAt, p.etaLeft, p.etaEnd = now, left, now.Add(last+t.P50)
	return last + t.P50, true
}

// Start marks the run's start at t: the rate counts from it, not from
// the first status.
func (p *Model) Start(t time.Time) { p.samples = append(p.samples, sample{t, 0}) }

// Unit is the rate's unit as shown: "/s", "/min" or "/h".
func (p *Model) Unit() string { return p.unitStr }

// Part is one part of the status text; parts with a higher drop
// are dropped first when the terminal is too narrow (0: never dropped).
type Part struct {
	Text string
	Drop int
}

// Join joins parts with commas.
func Join(parts []Part) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = p.Text
	}
	return strings.Join(s, ", ")
}
