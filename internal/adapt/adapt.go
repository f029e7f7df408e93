// Package adapt adapts a backend's margin to the lags that a pool's jobs
// measure: it feeds runner's events to a margin.Tracker (package margin),
// for pace run and pace fetch. pace proxy's transport adapts its own
// (package pacehttp).
package adapt

import (
	"time"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/margin"
)

// Margin adapts one backend's margin. It is safe for concurrent use.
type Margin struct{ t *margin.Tracker }

// New returns the adapted margin of b under rules: floor before anything
// is measured, never below least (see margin.Config). A backend with a
// store (shared with other processes) is adapted as shared.
func New(b throttle.Backend, floor, least time.Duration, rules []throttle.Rule) *Margin {
	return &Margin{margin.New(b, margin.Config{Floor: floor, Least: least, Rules: rules}.ForStore(b.Stats().Store.Name))}
}

// Observe takes one event of the pool: an admitted job counts as one that
// may arrive late until it ends; one that could not start, or ended
// without having sent anything, is forgotten; one that sent its call
// gives its lag and its answer's, or its load. When the margin moved notably (up by 1ms or
// more, down by 10ms or more) it returns the new margin, the lag that
// moved it, and true.
func (m *Margin) Observe(ev runner.Event) (now, lag time.Duration, moved bool) {
	switch ev.Kind {
	case runner.JobStarted:
		// From the record to now: the job starts after it, and a busy
		// machine may have held the pool between the two.
		now := time.Now()
		m.t.Started(ev.Admission.At, ev.Admission.Lag(now, now))
	case runner.JobNotStarted:
		m.t.Forget(ev.Result.Start)
	case runner.JobFinished:
		res := ev.Result
		if res.Sent.IsZero() {
			m.t.Forget(res.Start)
			return 0, 0, false
		}
		var before, after time.Duration
		if answered, ok := res.AnswerLag(); ok && res.Local {
			before, after = m.t.ObserveAnswered(res.Start, res.Lag, answered, res.NewConn)
		} else {
			before, after = m.t.ObserveLoad(res.Start, res.Lag, res.Runtime, margin.Load{CPU: res.CPU, Queued: res.Queued})
		}
		return after, res.Lag, after-before >= time.Millisecond || before-after >= 10*time.Millisecond
	}
	return 0, 0, false
}
