// Package tally counts admissions and what they waited on, for a
// backend's Stats: every backend of package throttle counts the same way
// with it.
package tally

import "time"

// Pseudo rule indexes for what an admission waited on.
const (
	None  = -1
	Pause = -2
)

// Tally counts admissions and what they waited on. The zero value is not
// usable: make one with New. It is not safe for concurrent use: the
// backend guards it.
type Tally struct {
	Admitted      int64
	Waits         int64
	WaitTime      time.Duration
	Pauses        int64
	PauseWaits    int64
	PauseWaitTime time.Duration
	Rules         []Rule
	lastWhy       int // what the head of the queue last slept on
}

// Rule is what a Tally counts for one rule.
type Rule struct {
	PeakUsed int
	Waits    int64
	WaitTime time.Duration
}

// New returns a tally for n rules.
func New(n int) *Tally { return &Tally{Rules: make([]Rule, n), lastWhy: None} }

// BlockedOnRule records that the head of the admission queue is about to
// sleep because rule i needs the longest wait.
func (t *Tally) BlockedOnRule(i int) { t.lastWhy = i }

// BlockedOnPause records that the head of the queue is about to sleep out
// a pause.
func (t *Tally) BlockedOnPause() { t.lastWhy = Pause }

// Paused counts a pause started or extended.
func (t *Tally) Paused() { t.Pauses++ }

// Observe records that rule i holds used calls (or cost) right after an
// admission or a correction, for its peak usage.
func (t *Tally) Observe(i, used int) { t.Rules[i].PeakUsed = max(t.Rules[i].PeakUsed, used) }

// Admit counts an admission that waited wait in all, charged to what the
// head of the queue last slept on.
func (t *Tally) Admit(wait time.Duration) {
	t.Admitted++
	t.GaveUp(wait)
}

// GaveUp counts a wait of wait that ended without an admission (its
// caller's context ended, as when a run is interrupted), charged as Admit
// charges one: a run cut short mid-wait still shows what it waited on.
func (t *Tally) GaveUp(wait time.Duration) {
	if wait <= 0 {
		return
	}
	t.Waits++
	t.WaitTime += wait
	switch why := t.lastWhy; {
	case why >= 0:
		t.Rules[why].Waits++
		t.Rules[why].WaitTime += wait
	case why == Pause:
		t.PauseWaits++
		t.PauseWaitTime += wait
	}
}
