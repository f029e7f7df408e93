package throttle

import (
	"time"
)

// Pseudo rule indexes for what an admission waited on.
const (
	bindNone  = -1
	bindPause = -2
)

// Stats is a snapshot of a backend's diagnostics. Every wait is counted
// as a pair: how many admissions waited (Waits) and how long in all
// (WaitTime).
type Stats struct {
	// Rules holds one entry per rule, in the order the rules were given.
	Rules []RuleStats

	Admitted int64         // calls admitted
	Waits    int64         // admissions that had to wait for the rates or a pause
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
	// could be renewed while the slots were all taken.
	LeasesLost int64
	// ClientTime counts admissions decided on this process's clock
	// because the store could not give its own (Redis refusing TIME).
	ClientTime int64
}

// RuleStats describes one rule's load.
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

// Tally counts admissions and what they waited on, for a backend's
// Stats. Every backend counts the same way with it. The zero value is not
// usable: make one with NewTally. It is not safe for concurrent use: the
// backend guards it.
type Tally struct {
	rules         []ruleStat
	admitted      int64
	waits         int64
	waitTime      int64
	pauses        int64
	pauseWaits    int64
	pauseWaitTime int64
	lastWhy       int // what the head of the queue last slept on
}

type ruleStat struct {
	peakUsed int
	waits    int64
	waitTime int64
}

// NewTally returns a tally for n rules.
func NewTally(n int) *Tally { return &Tally{rules: make([]ruleStat, n), lastWhy: bindNone} }

// BlockedOnRule records that the head of the admission queue is about to
// sleep because rule i needs the longest wait.
func (t *Tally) BlockedOnRule(i int) { t.lastWhy = i }

// BlockedOnPause records that the head of the queue is about to sleep out
// a pause.
func (t *Tally) BlockedOnPause() { t.lastWhy = bindPause }

// Paused counts a pause started or extended.
func (t *Tally) Paused() { t.pauses++ }

// Observe records that rule i holds used calls (or cost) right after an
// admission or a correction, for its peak usage.
func (t *Tally) Observe(i, used int) { t.rules[i].peakUsed = max(t.rules[i].peakUsed, used) }

// Admit counts an admission that waited wait in all, charged to what the
// head of the queue last slept on.
func (t *Tally) Admit(wait time.Duration) {
	t.admitted++
	if wait <= 0 {
		return
	}
	t.waits++
	t.waitTime += int64(wait)
	switch why := t.lastWhy; {
	case why >= 0:
		t.rules[why].waits++
		t.rules[why].waitTime += int64(wait)
	case why == bindPause:
		t.pauseWaits++
		t.pauseWaitTime += int64(wait)
	}
}

// Fill copies the counts into st (rules, admissions, waits and pauses),
// with each rule's current use as used reports it.
func (t *Tally) Fill(st *Stats, rules []Rule, used func(i int) int) {
	st.Rules = make([]RuleStats, len(rules))
	st.Admitted = t.admitted
	st.Waits = t.waits
	st.WaitTime = time.Duration(t.waitTime)
	st.Pauses = t.pauses
	st.PauseWaits = t.pauseWaits
	st.PauseWaitTime = time.Duration(t.pauseWaitTime)
	for i, r := range rules {
		u := used(i)
		rs := t.rules[i]
		st.Rules[i] = RuleStats{
			Rule:      r,
			Used:      u,
			Usage:     float64(u) / float64(r.N),
			PeakUsage: float64(rs.peakUsed) / float64(r.N),
			Waits:     rs.waits,
			WaitTime:  time.Duration(rs.waitTime),
		}
	}
}

// Stats returns a snapshot of the limiter's diagnostics. It holds the
// limiter's lock only to copy counters, never while anyone waits.
func (l *Limiter) Stats() Stats {
	var s Stats
	s.InFlight, s.PeakInFlight, s.SlotWaits, s.SlotWaitTime = l.slots.snapshot()
	s.MaxInFlight = l.slots.max
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.nowLocked(time.Now())
	l.tally.Fill(&s, l.rules, func(i int) int { return l.windows[i].used(now) })
	s.PauseReason = l.reason
	if l.pause > 0 {
		s.PausedUntil = l.toTime(l.pause)
	}
	s.Margin = l.margin
	return s
}
