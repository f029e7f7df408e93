package cmd

import (
	"slices"
	"time"
)

// The adaptive margin. A rule is kept on pace's clock, but the server
// counts arrivals. A call admitted at t reaches the server at t + lag, and
// lags vary: if the call admitted at t left late (lag a) and the one
// admitted a window later left early (lag b), the server sees them closer
// than a window by a - b. The margin widens every window by enough to
// cover that: at least the spread of the lags measured recently (the
// latest one included), plus the command's floor for what pace cannot
// measure (the network path, a child's own start-up).
//
// pace measures the lag from the admission to the call leaving: a child's
// exec returning (pace run), the request written (pace fetch), plus half
// the round trip that carried a remote backend's decision. A late call is
// measured once it has left, which is before the call a window later is
// admitted unless the lag is longer than the window, so the margin is wide
// enough in time. It narrows again slowly, as the late calls leave the
// span it remembers.

// marginTracker turns measured lags into the margin: floor plus the
// spread of the lags seen over the last span. It is not safe for
// concurrent use.
type marginTracker struct {
	floor, ceiling time.Duration
	span           time.Duration // how long a lag counts
	samples        []lagSample   // oldest first
	current        time.Duration
}

type lagSample struct {
	at  time.Time
	lag time.Duration
}

// maxLagSamples bounds the lags a tracker remembers.
const maxLagSamples = 4096

// newMarginTracker returns a tracker for a run whose longest rule window is
// longest: lags count for that long (at least 10s, at most 10 minutes),
// and the margin never exceeds half of it (at least 1s).
func newMarginTracker(floor, longest time.Duration) *marginTracker {
	return &marginTracker{
		floor:   floor,
		ceiling: max(floor, min(max(longest/2, time.Second), time.Minute)),
		span:    min(max(longest, 10*time.Second), 10*time.Minute),
		current: floor,
	}
}

// observe records a lag measured at now and returns the margin from now
// on: widened at once to cover the spread, narrowed by at most an eighth
// of the difference per call.
func (m *marginTracker) observe(now time.Time, lag time.Duration) time.Duration {
	lag = max(lag, 0)
	m.samples = append(m.samples, lagSample{now, lag})
	drop := 0
	for drop < len(m.samples)-1 && (now.Sub(m.samples[drop].at) > m.span || len(m.samples)-drop > maxLagSamples) {
		drop++
	}
	m.samples = slices.Delete(m.samples, 0, drop)
	lo, hi := m.samples[0].lag, m.samples[0].lag
	for _, s := range m.samples[1:] {
		lo, hi = min(lo, s.lag), max(hi, s.lag)
	}
	target := min(m.floor+(hi-lo), m.ceiling)
	switch {
	case target > m.current:
		m.current = target
	case target < m.current:
		m.current -= max((m.current-target)/8, min(time.Millisecond, m.current-target))
	}
	return m.current
}
