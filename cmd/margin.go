package cmd

import (
	"slices"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// The adaptive margin. A rule is kept on pace's clock, but the server
// counts arrivals. A call admitted at t reaches the server at t + lag, and
// lags vary. A rule N per W refuses call B at the server only if all N
// calls admitted before it in the window arrive within W before B does:
// B is admitted a window plus the margin after the oldest of them, so the
// margin must exceed the least lag among those N, minus B's own lag. The
// margin therefore covers, over the calls admitted recently, the largest
// least lag of N consecutive calls minus the least lag of all: for N = 1
// the whole spread, and less for larger N, since one early call among the
// N is enough to keep the window.
//
// pace knows two bounds of each call's lag. It left no sooner than pace
// saw it leave: a child's exec returning (pace run), the request written
// (pace fetch), plus half the round trip that carried a remote backend's
// decision. And a call whose job has ended had arrived by then, if the
// job waited for an answer (a curl does). The margin is the larger of
//
//   - least plus the spread of the first bound: what pace saw for certain,
//     plus what it cannot see (the network path, a child's own start-up);
//   - the spread with the second bound for the late calls and the first
//     for the early one, but no more than the floor: a job that ends
//     quickly proves its call left quickly, and a job that runs on proves
//     nothing, so the command's default (the floor) holds.
//
// For pace fetch least is the floor, so the margin is the floor plus the
// spread of what it measured. A late call is measured once it has left,
// which is before the call a window later is admitted unless the lag is
// longer than the window, so the margin is wide enough in time. It
// narrows again slowly, as the late calls leave the span it remembers.

// marginTracker turns measured lags into the margin. It is not safe for
// concurrent use.
type marginTracker struct {
	floor, least time.Duration
	ceiling      time.Duration
	span         time.Duration // how long a call's lag counts
	window       time.Duration // the longest rule window
	group        int           // N of the tightest rule: calls that must all be late
	samples      []lagSample   // by admission, oldest first
	seen         time.Duration // least plus the spread seen, narrowing slowly
	current      time.Duration
}

// lagSample is one call's lag: admitted at at, it left no sooner than lo
// after, and had arrived at most hi after (hi >= lo). A call still under
// way is pending: its lags are not known yet.
type lagSample struct {
	at      time.Time
	lo, hi  time.Duration
	pending bool
	latency time.Duration // of a pending call: its admission's Latency
}

// unknownLag stands for a bound not known: a call still under way may yet
// arrive at any time.
const unknownLag = time.Duration(1<<63 - 1)

// maxLagSamples bounds the lags a tracker remembers.
const maxLagSamples = 4096

// newMarginTracker returns a tracker for a run whose longest rule window is
// longest and whose tightest rule allows group calls per window (1 when a
// refusal can follow from one late call), with the command's floor and
// least margin (see above): lags count for that long (at least 10s, at
// most 10 minutes), and the margin never exceeds half of it (at least 1s).
func newMarginTracker(floor, least, longest time.Duration, group int) *marginTracker {
	return &marginTracker{
		floor:   floor,
		least:   min(least, floor),
		ceiling: max(floor, min(max(longest/2, time.Second), time.Minute)),
		span:    min(max(longest, 10*time.Second), 10*time.Minute),
		window:  longest,
		group:   max(group, 1),
		seen:    min(least, floor),
		current: floor,
	}
}

// marginGroup returns the group of a tracker for rules kept by a backend:
// the least N of the count rules, or 1 where one late call can be enough
// (a cost rule, whose calls may each fill it; a backend shared with other
// processes, whose calls this process does not see).
func marginGroup(rules []throttle.Rule, shared bool) int {
	group := 0
	for _, r := range rules {
		if r.Cost || shared {
			return 1
		}
		if group == 0 || r.N < group {
			group = r.N
		}
	}
	return max(group, 1)
}

// started records a call admitted at at, latency before its admission
// returned (throttle.Admission), and under way: until its lags are known,
// it counts as one that may arrive late.
func (m *marginTracker) started(at time.Time, latency time.Duration) {
	i := len(m.samples)
	for i > 0 && m.samples[i-1].at.After(at) {
		i--
	}
	m.samples = slices.Insert(m.samples, i, lagSample{at: at, lo: unknownLag, hi: unknownLag, pending: true, latency: latency})
}

// forget drops the pending call admitted at at: it never left.
func (m *marginTracker) forget(at time.Time) {
	if i := m.pendingAt(at); i >= 0 {
		m.samples = slices.Delete(m.samples, i, i+1)
	}
}

// pendingAt returns the index of a pending call admitted at at, or -1.
func (m *marginTracker) pendingAt(at time.Time) int {
	for i := len(m.samples) - 1; i >= 0; i-- {
		if s := m.samples[i]; s.pending && s.at.Equal(at) {
			return i
		}
	}
	return -1
}

// observe records, at now, the lags of a call admitted at at whose job
// has ended: it left lag after its admission (runner.Result.Lag), and its
// job ran for runtime from the admission's return (Result.Runtime),
// negative if the job did not wait for its call to arrive. It returns the
// margin from now on: widened at once to cover the lags, narrowed by at
// most an eighth of the difference per call.
func (m *marginTracker) observe(now, at time.Time, lag, runtime time.Duration) time.Duration {
	i := m.pendingAt(at)
	if i < 0 {
		m.started(at, 0)
		i = m.pendingAt(at)
	}
	lo, hi := max(lag, 0), unknownLag
	if runtime >= 0 {
		hi = max(lo, m.samples[i].latency+runtime)
	}
	m.samples[i] = lagSample{at: at, lo: lo, hi: hi}
	drop := 0
	for drop < len(m.samples)-1 && (now.Sub(m.samples[drop].at) > m.span || len(m.samples)-drop > maxLagSamples) {
		drop++
	}
	m.samples = slices.Delete(m.samples, 0, drop)
	least := unknownLag
	for _, s := range m.samples {
		least = min(least, s.lo)
	}
	// What pace saw counts the calls it saw leave, over the whole span,
	// and narrows slowly. A bound counts the calls that can still open a
	// window for the next admission, taking those under way as late as
	// can be; it holds until they have left every window, and no longer.
	seen := m.least + m.lateLeast(time.Time{}, false, func(s lagSample) time.Duration { return s.lo }) - least
	switch {
	case seen > m.seen:
		m.seen = seen
	case seen < m.seen:
		m.seen -= max((m.seen-seen)/8, min(time.Millisecond, m.seen-seen))
	}
	bound := m.lateLeast(now.Add(-m.window-m.current), true, func(s lagSample) time.Duration { return s.hi })
	if bound < unknownLag {
		bound -= least
	}
	m.current = min(max(m.seen, min(m.floor, bound)), m.ceiling)
	return m.current
}

// lateLeast returns the largest, over the calls x admitted from from on
// (pending ones included only if withPending), of the least of lag(k) + (k's admission - x's)
// over x and the group-1 calls admitted next: how late the calls in a
// window that x opens arrive, at the least, counted from x's admission. A
// sliding-window minimum over a deque of indices.
func (m *marginTracker) lateLeast(from time.Time, withPending bool, lag func(lagSample) time.Duration) time.Duration {
	samples := slices.DeleteFunc(slices.Clone(m.samples), func(s lagSample) bool {
		return s.at.Before(from) || s.pending && !withPending
	})
	if len(samples) == 0 {
		return 0
	}
	base := samples[0].at
	// v is when call i arrived at the latest (or left at the soonest),
	// from base: unknownLag for a call under way.
	v := func(i int) time.Duration {
		l := lag(samples[i])
		if l == unknownLag {
			return unknownLag
		}
		return l + samples[i].at.Sub(base)
	}
	k := min(m.group, len(samples))
	var most time.Duration
	dq := make([]int, 0, k+1)
	for i := range samples {
		for len(dq) > 0 && v(dq[len(dq)-1]) >= v(i) {
			dq = dq[:len(dq)-1]
		}
		dq = append(dq, i)
		if dq[0] <= i-k {
			dq = dq[1:]
		}
		if i >= k-1 {
			x := i - k + 1
			late := v(dq[0])
			if late != unknownLag {
				late -= samples[x].at.Sub(base)
			}
			most = max(most, late)
		}
	}
	return most
}
