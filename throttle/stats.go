package throttle

import (
	"errors"
	"time"
)

var errSeedLate = errors.New("throttle: Seed called after the first admission")

// Pseudo rule indexes for what an admission waited on.
const (
	bindNone  = -1
	bindPause = -2
)

// Stats is a snapshot of a limiter's diagnostics.
type Stats struct {
	// Rules holds one entry per rule, in the order the rules were given.
	Rules []RuleStats
	// Binding is the index in Rules of the binding constraint: the rule
	// with the highest usage now (ties go to the one waited on longer), or
	// -1 when no rule holds any call.
	Binding int
	// PeakBinding is the same over peak usage: the rule that bound the
	// run as a whole, or -1.
	PeakBinding int

	Admitted  int64         // calls admitted
	Waited    int64         // admissions that had to wait for the rates
	TotalWait time.Duration // time those admissions waited, in all

	InFlight     int           // slots held now (Acquire without release)
	PeakInFlight int           // most slots held at once
	MaxInFlight  int           // the cap, 0 for none
	SlotWaits    int64         // acquisitions that waited for a slot
	SlotWaitTime time.Duration // time they waited for it

	Pauses      int64         // times PauseUntil started or extended a pause
	PauseWaits  int64         // admissions delayed by a pause
	PausedFor   time.Duration // time admissions waited because of pauses
	PauseReason string        // reason of the latest pause
	PausedUntil time.Time     // end of the latest pause (zero if none)
}

// RuleStats describes one rule's load.
type RuleStats struct {
	Rule      Rule
	Used      int     // calls in the window now
	Usage     float64 // Used / N
	PeakUsage float64 // highest Usage seen right after an admission
	// Waits counts admissions whose wait this rule caused: it was the
	// longest wait when the caller (or the caller queued before it) last
	// slept. WaitTime is the time those admissions waited in all.
	Waits    int64
	WaitTime time.Duration
}

// stats are the counters behind Stats, guarded by the limiter's mutex.
type stats struct {
	rules      []ruleStat
	admitted   int64
	waited     int64
	totalWait  int64
	pauses     int64
	pauseWaits int64
	pausedFor  int64
	lastWhy    int // what the head of the queue last slept on
}

type ruleStat struct {
	peakUsed int
	waits    int64
	waitTime int64
}

func (r *ruleStat) observe(used int) { r.peakUsed = max(r.peakUsed, used) }

func (s *stats) blockedOn(why int) { s.lastWhy = why }

// admit counts an admission that waited wait nanoseconds, charged to what
// the head of the queue last slept on.
func (s *stats) admit(wait int64) {
	s.admitted++
	if wait <= 0 {
		return
	}
	s.waited++
	s.totalWait += wait
	switch why := s.lastWhy; {
	case why >= 0:
		s.rules[why].waits++
		s.rules[why].waitTime += wait
	case why == bindPause:
		s.pauseWaits++
		s.pausedFor += wait
	}
}

// Stats returns a snapshot of the limiter's diagnostics. It holds the
// limiter's lock only to copy counters, never while anyone waits.
func (l *Limiter) Stats() Stats {
	in, peak, slotWaits, slotWait := l.slots.snapshot()
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.internalLocked(l.clock.Now())
	s := Stats{
		Rules:        make([]RuleStats, len(l.rules)),
		Admitted:     l.stats.admitted,
		Waited:       l.stats.waited,
		TotalWait:    time.Duration(l.stats.totalWait),
		InFlight:     in,
		PeakInFlight: peak,
		MaxInFlight:  l.slots.max,
		SlotWaits:    slotWaits,
		SlotWaitTime: slotWait,
		Pauses:       l.stats.pauses,
		PauseWaits:   l.stats.pauseWaits,
		PausedFor:    time.Duration(l.stats.pausedFor),
		PauseReason:  l.reason,
	}
	if l.pause > 0 {
		s.PausedUntil = l.toTime(l.pause)
	}
	for i, r := range l.rules {
		used := l.windows[i].count(now)
		rs := l.stats.rules[i]
		s.Rules[i] = RuleStats{
			Rule:      r,
			Used:      used,
			Usage:     float64(used) / float64(r.N),
			PeakUsage: float64(rs.peakUsed) / float64(r.N),
			Waits:     rs.waits,
			WaitTime:  time.Duration(rs.waitTime),
		}
	}
	s.Binding = binding(s.Rules, func(r RuleStats) float64 { return r.Usage })
	s.PeakBinding = binding(s.Rules, func(r RuleStats) float64 { return r.PeakUsage })
	return s
}

// binding returns the index of the rule with the highest usage, ties going
// to the longer wait, or -1 when every usage is 0.
func binding(rules []RuleStats, usage func(RuleStats) float64) int {
	best := -1
	for i, r := range rules {
		if usage(r) == 0 {
			continue
		}
		if best < 0 || usage(r) > usage(rules[best]) ||
			(usage(r) == usage(rules[best]) && r.WaitTime > rules[best].WaitTime) {
			best = i
		}
	}
	return best
}
