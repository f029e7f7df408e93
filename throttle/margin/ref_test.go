package margin

// The refTracker as it was before its observations were made cheaper (see
// TestTrackerMatchesReference): every observation recomputed from all samples
// in several passes.
//
// Its methods are //go:norace: it runs on the test's goroutine alone, and
// under -race the instrumentation of its passes (each read checked) took
// the test from about 1s to 10s on two cores, which -race has nothing to
// find in. The tracker it checks is instrumented as ever. For the same
// reason record inserts into its sorted arrivals with a loop of its own
// rather than slices.BinarySearch and slices.Insert, which are compiled
// with the instrumentation.

import (
	"cmp"
	"math"
	"slices"
	"time"
)

type refTracker struct {
	floor, least time.Duration
	ceiling      time.Duration
	span         time.Duration // how long a call's lag counts
	window       time.Duration // the longest rule window
	group        int           // N of the tightest rule: calls that must all be late
	samples      []refSample   // by admission, oldest first
	seen         time.Duration // least plus the spread seen, narrowing slowly
	current      time.Duration
	underWay     time.Duration   // the latest a call under way is taken to leave
	idx, dq      []int           // lateLeast's buffers
	vals         []time.Duration // lateLeast's buffer
	// minLatency and minGap: as tracker's, sticky, recomputed from the
	// samples left when old ones are dropped.
	minLatency, minGap time.Duration
	roundTrip          bool
	cut                time.Duration
}
type refSample struct {
	at      int64 // Unix ns: cheaper to compare and subtract than a time.Time
	lo, hi  time.Duration
	pending bool
	latency time.Duration // its admission's Latency; unknownLag if never started
	stretch time.Duration // how much longer than the floor its start-up may have taken
	gap     time.Duration // from leaving to answer; unknownLag if not told
	cut     bool
}

func newRefTracker(floor, least, longest time.Duration, group int) *refTracker {
	return &refTracker{
		floor:      floor,
		least:      min(least, floor),
		ceiling:    max(floor, min(longest/2, time.Minute)),
		span:       min(max(longest, 10*time.Second), 10*time.Minute),
		window:     longest,
		group:      max(group, 1),
		seen:       min(least, floor),
		current:    floor,
		minLatency: unknownLag,
		minGap:     unknownLag,
	}
}

//go:norace
func (m *refTracker) started(at time.Time, latency time.Duration) {
	i := len(m.samples)
	ns := at.UnixNano()
	for i > 0 && m.samples[i-1].at > ns {
		i--
	}
	m.samples = slices.Insert(m.samples, i, refSample{at: ns, lo: unknownLag, hi: unknownLag, pending: true, latency: latency, gap: unknownLag})
}

//go:norace
func (m *refTracker) forget(at time.Time) {
	if i := m.pendingAt(at); i >= 0 {
		m.samples = slices.Delete(m.samples, i, i+1)
	}
}

//go:norace
func (m *refTracker) pendingAt(at time.Time) int {
	for i := len(m.samples) - 1; i >= 0; i-- {
		if s := m.samples[i]; s.pending && s.at == at.UnixNano() {
			return i
		}
	}
	return -1
}

//go:norace
func (m *refTracker) observe(now, at time.Time, lag, runtime time.Duration) time.Duration {
	return m.observeLoad(now, at, lag, runtime, Load{})
}

//go:norace
func (m *refTracker) observeLoad(now, at time.Time, lag, runtime time.Duration, load Load) time.Duration {
	i := m.pendingAt(at)
	lat, d, kept := time.Duration(0), time.Duration(0), unknownLag
	if i < 0 {
		m.started(at, 0)
		i = m.pendingAt(at)
	} else {
		lat = m.samples[i].latency
		m.minLatency = min(m.minLatency, lat)
		d, kept = lat-m.minLatency, lat
		if !m.roundTrip {
			d = 0
		}
	}
	stretch := load.stretch(m.floor, m.ceiling)
	lo := max(lag-d, 0)
	hi := max(lag, 0) + d + m.floor + stretch
	if runtime >= 0 {
		hi = max(lo, min(hi, lat+d+runtime))
	}
	return m.record(now, i, refSample{at: at.UnixNano(), lo: lo, hi: hi, latency: kept, stretch: stretch, gap: unknownLag})
}

//go:norace
func (m *refTracker) observeAnswered(now, at time.Time, lag, answered time.Duration, newConn bool) time.Duration {
	i := m.pendingAt(at)
	d, kept := time.Duration(0), unknownLag
	if i < 0 {
		m.started(at, 0)
		i = m.pendingAt(at)
	} else {
		lat := m.samples[i].latency
		m.minLatency = min(m.minLatency, lat)
		d, kept = lat-m.minLatency, lat
		if !m.roundTrip {
			d = 0
		}
	}
	lag = max(lag, 0)
	gap := max(answered-lag, 0)
	m.minGap = min(m.minGap, gap)
	stretch := min(gap-m.minGap, m.ceiling)
	return m.record(now, i, refSample{at: at.UnixNano(), lo: max(lag-d, 0), hi: lag + d + gap, latency: kept, stretch: stretch, gap: gap, cut: !newConn})
}

//go:norace
func (m *refTracker) record(now time.Time, i int, s refSample) time.Duration {
	m.samples[i] = s
	m.sortTie(i)
	// Samples older than the span, or beyond the most kept, no longer
	// count; they are dropped a quarter at a time, so that the slice is
	// not shifted at every call.
	first := now.UnixNano() - int64(m.span)
	old := 0
	for old < len(m.samples)-1 && (m.samples[old].at < first || len(m.samples)-old > maxLagSamples) {
		old++
	}
	if old > 0 && old >= len(m.samples)/4 {
		m.samples = slices.Delete(m.samples, 0, old)
		old = 0
		m.minLatency, m.minGap = unknownLag, unknownLag
		for _, s := range m.samples {
			if !s.pending {
				m.minLatency, m.minGap = min(m.minLatency, s.latency), min(m.minGap, s.gap)
			}
		}
	}
	m.cut = 0
	if m.minGap != unknownLag {
		m.cut = max(m.minGap-m.floor, 0)
	}
	live := m.samples[old:]
	least, latest, stretched := unknownLag, time.Duration(0), time.Duration(0)
	for _, s := range live {
		if !s.pending {
			least, latest, stretched = min(least, s.lo), max(latest, s.lo), max(stretched, s.stretch)
		}
	}
	m.underWay = latest + m.floor + stretched
	// What pace saw counts the calls it saw leave, over the whole span,
	// and narrows slowly. A bound counts the calls that can still open a
	// window for the next admission, taking those under way as late as
	// can be; it holds until they have left every window, and no longer.
	seen := m.least + m.lateLeast(live, math.MinInt64, false) - least
	switch {
	case seen > m.seen:
		m.seen = seen
	case seen < m.seen:
		m.seen -= max((m.seen-seen)/8, min(time.Millisecond, m.seen-seen))
	}
	from := now.Add(-m.window - m.current).UnixNano()
	bound := m.lateLeast(live, from, true)
	if m.group < len(live) {
		// The Nth latest arrival up to x's window's end, from x's
		// admission (tracker.nthLatest): the arrivals so far kept sorted.
		var arr []int64
		for x := range live {
			for len(arr) < min(x+m.group, len(live)) {
				i := len(arr)
				l := live[i].hi
				if live[i].cut {
					l -= m.cut
				}
				if live[i].pending {
					l = live[i].latency + m.underWay
				}
				v := int64(math.MaxInt64)
				if l != unknownLag {
					v = live[i].at + int64(l)
				}
				if live[i].at < from && v <= from {
					// Counts for nothing (tracker.nthLatest): left out,
					// as the least a window can then have.
					v = math.MinInt64
				}
				at, hi := 0, len(arr) // the first at with arr[at] >= v
				for at < hi {
					if mid := int(uint(at+hi) >> 1); arr[mid] < v {
						at = mid + 1
					} else {
						hi = mid
					}
				}
				arr = append(arr, 0)
				copy(arr[at+1:], arr[at:])
				arr[at] = v
			}
			if live[x].at < from {
				continue
			}
			v := arr[len(arr)-min(m.group, len(arr)-x)]
			if v == math.MinInt64 {
				continue
			}
			if v == math.MaxInt64 {
				bound = unknownLag
				break
			}
			bound = max(bound, time.Duration(v-live[x].at))
		}
		m.current = min(max(m.seen, bound), m.ceiling)
		return m.current
	}
	// A call admitted before x that arrived after x's admission
	// (oneWindow's over), sample by sample with the arrived arrival so far.
	arrived, any := int64(math.MinInt64), false
	for _, sm := range live {
		if any && sm.at >= from {
			if arrived == math.MaxInt64 {
				bound = unknownLag
			} else {
				bound = max(bound, time.Duration(arrived-sm.at))
			}
		}
		l := sm.hi
		if sm.cut {
			l -= m.cut
		}
		if sm.pending {
			l = sm.latency + m.underWay
		}
		if l == unknownLag {
			arrived = math.MaxInt64
		} else {
			arrived = max(arrived, sm.at+int64(l))
		}
		any = true
	}
	m.current = min(max(m.seen, bound), m.ceiling)
	return m.current
}

//go:norace
func (m *refTracker) sortTie(i int) {
	key := func(s refSample) time.Duration {
		if s.pending {
			return unknownLag
		}
		return s.lo
	}
	for i > 0 && m.samples[i-1].at == m.samples[i].at && key(m.samples[i-1]) > key(m.samples[i]) {
		m.samples[i-1], m.samples[i] = m.samples[i], m.samples[i-1]
		i--
	}
	for i+1 < len(m.samples) && m.samples[i+1].at == m.samples[i].at && key(m.samples[i+1]) < key(m.samples[i]) {
		m.samples[i+1], m.samples[i] = m.samples[i], m.samples[i+1]
		i++
	}
}

//go:norace
func (m *refTracker) lateLeast(samples []refSample, from int64, upper bool) time.Duration {
	idx := m.idx[:0]
	start, _ := slices.BinarySearchFunc(samples, from, func(s refSample, t int64) int { return cmp.Compare(s.at, t) })
	for i := start; i < len(samples); i++ {
		if upper || !samples[i].pending {
			idx = append(idx, i)
		}
	}
	m.idx = idx
	if len(idx) == 0 {
		return 0
	}
	base := samples[idx[0]].at
	// vals[j] is when the jth call arrived at the latest (or left at the
	// soonest), from base: unknownLag for a call under way.
	vals := slices.Grow(m.vals[:0], len(idx))
	for _, i := range idx {
		s := &samples[i]
		l := s.lo
		if upper {
			l = s.hi
			if s.cut {
				l -= m.cut
			}
			if s.pending {
				l = s.latency + m.underWay
			}
		}
		if l != unknownLag {
			l += time.Duration(s.at - base)
		}
		vals = append(vals, l)
	}
	m.vals = vals
	k := min(m.group, len(idx))
	if upper {
		k = m.group // only complete windows here; the others below
	}
	var most time.Duration
	dq := slices.Grow(m.dq[:0], len(idx))[:len(idx)]
	m.dq = dq
	head, tail := 0, 0 // the deque is dq[head:tail]
	for j := range idx {
		vj := vals[j]
		for tail > head && vals[dq[tail-1]] >= vj {
			tail--
		}
		dq[tail] = j
		tail++
		if dq[head] <= j-k {
			head++
		}
		if j >= k-1 {
			x := j - k + 1
			late := vals[dq[head]]
			if late != unknownLag {
				late -= time.Duration(samples[idx[x]].at - base)
			}
			most = max(most, late)
		}
	}
	if upper {
		// Windows not complete: the calls not yet admitted are taken as
		// arriving too late to keep them.
		for x := len(idx) - 1; x >= 0 && x > len(idx)-k; x-- {
			least := unknownLag
			for _, v := range vals[x:] {
				least = min(least, v)
			}
			if least != unknownLag {
				least -= time.Duration(samples[idx[x]].at - base)
			}
			most = max(most, least)
		}
	}
	if !upper {
		// The last calls open windows that calls not yet admitted will
		// complete; those will be admitted later than now, after every
		// call seen had left, so they cannot be early enough to keep such
		// a window: it counts with the calls it has. A call under way
		// counts as one that left at once (the least it can have done).
		// Without this, a burst's latest call was covered only once N
		// more calls had come, too late for the burst a window later.
		suffix := unknownLag
		tail := samples[start:]
		for j := len(tail) - 1; j >= 0 && j > len(tail)-k-1; j-- {
			lag := tail[j].lo
			if tail[j].pending {
				lag = 0
			}
			suffix = min(suffix, lag+time.Duration(tail[j].at-base))
			most = max(most, suffix-time.Duration(tail[j].at-base))
		}
	}
	return most
}
