package throttle

import (
	"time"

	"github.com/pace-cli/pace/throttle/internal/tally"
)

// Stats is a snapshot of a backend's diagnostics. Every wait is counted
// as a pair: how many admissions waited (Waits) and how long in all
// (WaitTime). A wait for the rules that its caller gave up (its context
// ended) counts as one too, for as long as it lasted.
type Stats struct {
	// Rules holds one entry per rule, in the order the rules were given.
	Rules []RuleStats

	Admitted int64         // calls admitted
	Waits    int64         // admissions that had to wait for the rates or a pause (and waits given up)
	WaitTime time.Duration // time those admissions waited, in all

	InFlight     int           // slots held now (admitted and not released)
	PeakInFlight int           // most slots held at once
	MaxInFlight  int           // the cap, 0 for none
	SlotWaits    int64         // admissions that waited for a slot
	SlotWaitTime time.Duration // time they waited for it

	Pauses        int64         // times PauseUntil started or extended a pause
	PauseWaits    int64         // admissions delayed by a pause
	PauseWaitTime time.Duration // time admissions waited because of pauses
	PauseReason   string        // reason of the latest pause
	PausedUntil   time.Time     // end of the latest pause (zero if none)

	// Margin is the margin added to every window now.
	Margin time.Duration

	// Store counts a shared backend's traffic with its store (Redis, a
	// local file); zero for the in-memory limiter.
	Store StoreStats
}

// StoreStats counts a shared backend's traffic with the store that keeps
// its state.
type StoreStats struct {
	// Name names the store: "redis" or "local"; empty for none.
	Name string
	// RoundTrips counts calls to the store, successful or not, for
	// admissions, slots and lease renewals. In steady state an admission
	// that does not wait costs one.
	RoundTrips int64
	// Failures counts calls that got no usable answer.
	Failures int64
	// LeasesLost counts fleet-wide slots whose lease expired before it
	// could be renewed (each once), whether the renewal found the slots
	// all taken or took the slot again: while it had run out, another
	// process could hold it.
	LeasesLost int64
	// ClientTime counts admissions decided on this process's clock
	// because the store could not give its own (Redis refusing TIME).
	ClientTime int64
}

// RuleStats describes one rule's load: in a backend's Stats, and in what
// the shared backends' Inspect reads from their store (where the wait
// counts are zero).
type RuleStats struct {
	Rule      Rule
	Used      int     // calls (or cost) in the window now
	Usage     float64 // Used / N
	PeakUsage float64 // highest Usage seen right after an admission
	// Waits counts admissions whose wait this rule caused: it was the
	// longest wait when the caller (or the caller queued before it) last
	// slept. WaitTime is the time those admissions waited in all.
	Waits    int64
	WaitTime time.Duration
	// Counter reports a rule kept by a bounded sliding window counter
	// rather than an exact log (Options.CounterAbove).
	Counter bool
}

// Busiest returns the index in s.Rules of the rule with the highest usage
// now (ties go to the one waited on longer), or -1 when no rule holds any
// call: the rule closest to holding the next call back.
func (s Stats) Busiest() int {
	best := -1
	for i, r := range s.Rules {
		if r.Usage == 0 {
			continue
		}
		if best < 0 || r.Usage > s.Rules[best].Usage ||
			r.Usage == s.Rules[best].Usage && r.WaitTime > s.Rules[best].WaitTime {
			best = i
		}
	}
	return best
}

// fillTally copies t's counts into st (rules, admissions, waits and
// pauses), with each rule's current use as used reports it.
func fillTally(st *Stats, t *tally.Tally, rules []Rule, used func(i int) int) {
	st.Rules = make([]RuleStats, len(rules))
	st.Admitted = t.Admitted
	st.Waits = t.Waits
	st.WaitTime = t.WaitTime
	st.Pauses = t.Pauses
	st.PauseWaits = t.PauseWaits
	st.PauseWaitTime = t.PauseWaitTime
	for i, r := range rules {
		u := used(i)
		rs := t.Rules[i]
		st.Rules[i] = RuleStats{
			Rule:      r,
			Used:      u,
			Usage:     float64(u) / float64(r.N),
			PeakUsage: float64(rs.PeakUsed) / float64(r.N),
			Waits:     rs.Waits,
			WaitTime:  rs.WaitTime,
		}
	}
}

// Stats returns a snapshot of the limiter's diagnostics. It holds the
// limiter's lock only to copy counters, never while anyone waits.
func (l *Limiter) Stats() Stats {
	var s Stats
	l.mu.Lock()
	defer l.mu.Unlock()
	s.InFlight, s.PeakInFlight, s.SlotWaits, s.SlotWaitTime = int(l.slots.used.Load()), int(l.slots.peak.Load()), l.slots.waits, l.slots.waitTime
	s.MaxInFlight = l.slots.max
	now := l.nowLocked(time.Now())
	fillTally(&s, l.tally, l.rules, func(i int) int { return l.windows[i].used(now) })
	for i, w := range l.windows {
		_, s.Rules[i].Counter = w.(*slidingCounter)
	}
	s.PauseReason = l.reason
	if l.pause > 0 {
		s.PausedUntil = l.toTime(l.pause)
	}
	s.Margin = l.margin
	return s
}
