package margin

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// The adaptive margin, measured. A rule is kept on pace's clock, but the server
// counts arrivals. A call admitted at t reaches the server at t + lag, and
// lags vary. A rule N per W refuses call B at the server only if all N
// calls admitted before it in the window arrive within W before B does:
// B is admitted a window plus the margin after the oldest of them, so the
// margin must exceed the least lag among those N, minus B's own lag. The
// margin therefore covers, over the calls admitted recently, the largest
// least lag of N consecutive calls: for N = 1 the whole lag of the latest,
// and less for larger N, since one early call among the N is enough to
// keep the window. B's own lag counts as none: the lags seen so far are
// no bound for the next call's (a run's first calls dial new connections,
// the later ones go out on kept-alive ones, often 10 to 50 times sooner).
//
// pace knows two bounds of each call's lag. It left no sooner than pace
// saw it leave: a child's exec returning (pace run), the request written
// (pace fetch), plus half the round trip that carried a remote backend's
// decision and the hand-over after its reply. And a call whose job has
// ended had arrived by then, if the job waited for an answer (a curl
// does). The margin is the larger of
//
//   - least plus the spread of the first bound: what pace saw for certain,
//     plus what it cannot see (the network path, a child's own start-up);
//   - the second bound, from the admission: when the late calls had
//     arrived at the latest. A job that ends quickly proves its call left
//     quickly; a job that runs on proves nothing, so the command's
//     default holds for it: its call left within the floor of the first
//     bound, the floor stretched by what a busy machine did to the
//     process (Load: the time it waited, runnable, for a CPU). A call
//     still under way counts as leaving as late as the latest seen, plus
//     the floor and the largest stretch seen.
//
// For pace fetch least is the floor, so the first is the floor plus the
// spread of what it measured, and the second, when a call's answer came
// late, is often the larger. A late call is measured once it has left,
// which is before the call a window later is admitted unless the lag is
// longer than the window, so the margin is wide enough in time. It
// narrows again slowly, as the late calls leave the span it remembers.

// tracker turns measured lags into the margin. It is not safe for
// concurrent use: Tracker guards it.
type tracker struct {
	floor, least time.Duration
	ceiling      time.Duration
	span         time.Duration // how long a call's lag counts
	window       time.Duration // the longest rule window
	group        int           // N of the tightest rule: calls that must all be late
	samples      []lagSample   // by admission, oldest first
	seen         time.Duration // least plus the spread seen, narrowing slowly
	current      time.Duration
	underWay     time.Duration   // the latest a call under way is taken to leave
	dq           []int           // lateLeast's buffer
	latest       []int64         // nthLatest's heap
	vals, ats    []time.Duration // lateLeast's buffers
	// The least latency of an admission and the least gap from a call's
	// leaving to its answer, over the calls ended and not yet dropped
	// (unknownLag until one is seen): what a call's own, if longer, is
	// compared with.
	minLatency, minGap time.Duration
	roundTrip          bool          // latencies are half round trips and the hand-over (Config.RoundTrip)
	cut                time.Duration // how much sooner than their answers calls arrived at the latest (observeAnswered)
	// oneWindow's summaries of the samples before built, blockSize at a
	// time (see onewindow.go).
	blocks    []block
	built     int
	blockHits int // blocks read, for the tests
	old       int // the samples before it no longer counted at the last call
}

// lagSample is one call's lag: admitted at at, it left no sooner than lo
// after, and had arrived at most hi after (hi >= lo). A call still under
// way is pending: its lags are not known yet.
type lagSample struct {
	at      int64 // Unix ns: cheaper to compare and subtract than a time.Time
	lo, hi  time.Duration
	pending bool
	latency time.Duration // its admission's Latency
	stretch time.Duration // how much longer than the floor its start-up may have taken
	gap     time.Duration // from its leaving to its answer; unknownLag if not told
	cut     bool          // hi is the answer's bound, less the tracker's cut (observeAnswered)
}

// unknownLag stands for a bound not known: a call still under way may yet
// arrive at any time.
const unknownLag = time.Duration(1<<63 - 1)

// maxLagSamples bounds the lags a tracker remembers, and the work of an
// observation (BenchmarkMarginTrackerFull).
const maxLagSamples = 1024

// newTracker returns a tracker for a run whose longest rule window is
// longest and whose tightest rule allows group calls per window (1 when a
// refusal can follow from one late call), with the command's floor and
// least margin (see above): lags count for that long (at least 10s, at
// most 10 minutes), and the margin never exceeds half the longest window
// (nor a minute), or the floor if that is more.
func newTracker(floor, least, longest time.Duration, group int) *tracker {
	return &tracker{
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

// group returns the group of a tracker for rules kept by a backend:
// the least N of the count rules, or 1 where one late call can be enough
// (a cost rule, whose calls may each fill it; a backend shared with other
// processes, whose calls this process does not see).
func group(rules []throttle.Rule, shared bool) int {
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
func (m *tracker) started(at time.Time, latency time.Duration) {
	i := len(m.samples)
	ns := at.UnixNano()
	for i > 0 && m.samples[i-1].at > ns {
		i--
	}
	m.samples = slices.Insert(m.samples, i, lagSample{at: ns, lo: unknownLag, hi: unknownLag, pending: true, latency: latency, gap: unknownLag})
	m.changed(i)
}

// forget drops the pending call admitted at at: it never left.
func (m *tracker) forget(at time.Time) {
	if i := m.pendingAt(at); i >= 0 {
		m.samples = slices.Delete(m.samples, i, i+1)
		m.changed(i)
	}
}

// pendingAt returns the index of a pending call admitted at at, or -1.
func (m *tracker) pendingAt(at time.Time) int {
	for i := len(m.samples) - 1; i >= 0; i-- {
		if s := m.samples[i]; s.pending && s.at == at.UnixNano() {
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
func (m *tracker) observe(now, at time.Time, lag, runtime time.Duration) time.Duration {
	return m.observeLoad(now, at, lag, runtime, Load{})
}

// observeLoad is observe for a call whose process saw load.
func (m *tracker) observeLoad(now, at time.Time, lag, runtime time.Duration, load Load) time.Duration {
	i, lat, d, kept := m.ended(at)
	lo := max(lag-d, 0)
	stretch := load.stretch(m.floor, m.ceiling)
	hi := max(lag, 0) + d + m.floor + stretch
	if runtime >= 0 {
		hi = max(lo, min(hi, lat+d+runtime))
	}
	return m.record(now, i, lagSample{at: at.UnixNano(), lo: lo, hi: hi, latency: kept, stretch: stretch, gap: unknownLag})
}

// observeAnswered records, at now, the lags of a call admitted at at
// whose answer came: it left lag after its admission and was answered
// answered after it (both counting the admission's latency), on a
// connection opened for it if newConn. It returns the margin from now on,
// as observe.
//
// The call reached the server between its leaving and its answer. The
// quickest answer seen, gap from leaving to answer, says how long a server
// takes at the least to answer once it has read a call: all of it, but
// the floor the call is trusted to take to arrive. So every call arrived
// by its answer less that (the cut, minGap - floor): a server slow to
// answer every call widens nothing, and one that answered a call late may
// have read it late (a busy server reads what waits in its socket when it
// runs again). The cut is the least gap's of now, applied to every call
// when the margin is computed: a run that starts on a busy machine sees
// slow answers only, and the quick ones that come later show that those
// were read late. A call on a new connection is trusted with nothing but
// its answer: a server accepts a connection when it gets to it, and the
// client cannot see it wait in the queue.
func (m *tracker) observeAnswered(now, at time.Time, lag, answered time.Duration, newConn bool) time.Duration {
	i, _, d, kept := m.ended(at)
	lag = max(lag, 0)
	gap := max(answered-lag, 0)
	m.minGap = min(m.minGap, gap)
	stretch := min(gap-m.minGap, m.ceiling)
	return m.record(now, i, lagSample{at: at.UnixNano(), lo: max(lag-d, 0), hi: lag + d + gap, latency: kept, stretch: stretch, gap: gap, cut: !newConn})
}

// ended returns the index of the pending call admitted at at, adding one
// if it never started, its admission's latency, and, if latencies are half
// round trips, how much longer that latency was than the least seen: a
// round trip longer than the least may have been long on its way back as
// well as out, so the call's true lag is the measured one give or take
// that excess. kept is the latency the ended sample keeps: unknownLag for
// a call that never started, whose latency no one told.
func (m *tracker) ended(at time.Time) (i int, lat, d, kept time.Duration) {
	i = m.pendingAt(at)
	if i < 0 {
		m.started(at, 0)
		return m.pendingAt(at), 0, 0, unknownLag
	}
	lat = m.samples[i].latency
	m.minLatency = min(m.minLatency, lat)
	if !m.roundTrip {
		return i, lat, 0, lat
	}
	return i, lat, lat - m.minLatency, lat
}

// record replaces the pending sample i with s, a call ended, and returns
// the margin from now on.
func (m *tracker) record(now time.Time, i int, s lagSample) time.Duration {
	m.samples[i] = s
	m.changed(m.sortTie(i))
	// Samples older than the span, or beyond the most kept, no longer
	// count; they are dropped a quarter at a time, so that the slice is
	// not shifted at every call.
	// Those no longer counting are a prefix (admissions rise with the
	// index): its end moves from where it was at the last call.
	first := now.UnixNano() - int64(m.span)
	gone := func(i int) bool { return m.samples[i].at < first || len(m.samples)-i > maxLagSamples }
	old := min(m.old, len(m.samples)-1)
	for old > 0 && !gone(old-1) {
		old--
	}
	for old < len(m.samples)-1 && gone(old) {
		old++
	}
	m.old = old
	if old > 0 && old >= len(m.samples)/4 {
		m.samples = slices.Delete(m.samples, 0, old)
		m.changed(0)
		old, m.old = 0, 0
		m.minLatency, m.minGap = leastOf(m.samples)
	}
	m.cut = 0
	if m.minGap != unknownLag {
		m.cut = max(m.minGap-m.floor, 0)
	}
	live := m.samples[old:]
	// What pace saw counts the calls it saw leave, over the whole span,
	// and narrows slowly. A bound counts the calls that can still open a
	// window for the next admission, taking those under way as late as
	// can be; it holds until they have left every window, and no longer.
	from := now.Add(-m.window - m.current).UnixNano() // the upper pass's calls
	var most, least, bound, over time.Duration
	one := m.group >= len(live)
	if one {
		most, least, bound, over = m.oneWindow(live, from)
	} else {
		most, least = m.lateLeast(live, math.MinInt64, false)
	}
	seen := m.least + most - least
	switch {
	case seen > m.seen:
		m.seen = seen
	case seen < m.seen:
		m.seen -= max((m.seen-seen)/8, min(time.Millisecond, m.seen-seen))
	}
	if one {
		// Every window is still open: the bound of the calls before x
		// (overtaken), from oneWindow's pass, where the Nth latest would
		// need a sort.
		bound = max(bound, over)
	} else {
		bound, _ = m.lateLeast(live, from, true)
		bound = max(bound, m.nthLatest(live, from))
	}
	// The bound is not less the least lag seen: the next call may leave
	// sooner than every call seen (TestMarginTrackerNextLeavesAtOnce).
	m.current = min(max(m.seen, bound), m.ceiling)
	return m.current
}

// leastOf returns the least latency and the least gap of the calls in
// samples that have ended (unknownLag for none).
func leastOf(samples []lagSample) (latency, gap time.Duration) {
	latency, gap = unknownLag, unknownLag
	for i := range samples {
		if s := &samples[i]; !s.pending {
			latency, gap = min(latency, s.latency), min(gap, s.gap)
		}
	}
	return latency, gap
}

// sortTie moves sample i among the samples admitted at the same instant,
// so that they stand by their soonest lag, the calls under way last. A
// server counts arrivals, not pace's order: of calls admitted together,
// the one that arrives last is the one a window admitted later can
// collide with, so it must stand last, where the windows that the calls
// after it open begin. It returns the lowest index it changed.
func (m *tracker) sortTie(i int) (lowest int) {
	key := func(s lagSample) time.Duration {
		if s.pending {
			return unknownLag
		}
		return s.lo
	}
	for i > 0 && m.samples[i-1].at == m.samples[i].at && key(m.samples[i-1]) > key(m.samples[i]) {
		m.samples[i-1], m.samples[i] = m.samples[i], m.samples[i-1]
		i--
	}
	lowest = i
	for i+1 < len(m.samples) && m.samples[i+1].at == m.samples[i].at && key(m.samples[i+1]) < key(m.samples[i]) {
		m.samples[i+1], m.samples[i] = m.samples[i], m.samples[i+1]
		i++
	}
	return lowest
}

// lateLeast returns the largest, over the samples x admitted from from on
// (Unix ns), of the least of lag(k) +
// (k's admission - x's) over x and the group-1 calls admitted next: how
// late the calls in a window that x opens arrive, at the least, counted
// from x's admission. The lag is the latest bound (hi) if upper, and then
// a pending call counts as leaving m.underWay after its admission's
// latency; else it is the soonest (lo), over the calls seen, and
// lateLeast also returns the least lag seen and sets m.underWay (from the
// latest lag and the largest stretch seen), for the upper pass after it.
//
// One pass: a sliding-window minimum over a deque, in buffers the tracker
// keeps, so that an observation allocates nothing
// (BenchmarkMarginTrackerFull).
func (m *tracker) lateLeast(samples []lagSample, from int64, upper bool) (most, least time.Duration) {
	if from != math.MinInt64 {
		start, _ := slices.BinarySearchFunc(samples, from, func(s lagSample, t int64) int { return cmp.Compare(s.at, t) })
		samples = samples[start:]
	}
	if m.group >= len(samples) {
		return m.lateLeastOne(samples, upper)
	}
	least = unknownLag
	var latest, stretched time.Duration
	// vals[j] is when the jth call counted arrived at the latest (or left
	// at the soonest), from base, the first one's admission; ats[j] is its
	// admission, from base.
	vals := slices.Grow(m.vals[:0], len(samples))[:len(samples)]
	ats := slices.Grow(m.ats[:0], len(samples))[:len(samples)]
	dq := slices.Grow(m.dq[:0], len(samples))[:len(samples)]
	m.vals, m.ats, m.dq = vals, ats, dq
	k := m.group
	var base int64
	n := 0             // calls counted
	head, tail := 0, 0 // the deque of the window's least is dq[head:tail]
	for i := range samples {
		s := &samples[i]
		l, ok := m.lagOf(s, upper)
		if !ok {
			continue
		}
		if !upper {
			least, latest, stretched = min(least, s.lo), max(latest, s.lo), max(stretched, s.stretch)
		}
		if n == 0 {
			base = s.at
		}
		at := time.Duration(s.at - base)
		if l != unknownLag {
			l += at
		}
		j := n
		vals[j], ats[j] = l, at
		n++
		for tail > head && vals[dq[tail-1]] >= l {
			tail--
		}
		dq[tail] = j
		tail++
		if dq[head] <= j-k {
			head++
		}
		if j >= k-1 {
			most = max(most, lateFrom(vals[dq[head]], ats[j-k+1]))
		}
	}
	if !upper {
		m.underWay = latest + m.floor + stretched
	}
	if n == 0 {
		return 0, least
	}
	if upper {
		most = max(most, trailing(vals[:n], ats[:n], k))
		return most, least
	}
	if n < k {
		// Fewer calls than a group: the one window is the first call's.
		most = max(most, lateFrom(vals[dq[head]], 0))
		k = n
	}
	// The last calls open windows that calls not yet admitted will
	// complete; those will be admitted later than now, after every
	// call seen had left, so they cannot be early enough to keep such
	// a window: it counts with the calls it has. A call under way
	// counts as one that left at once (the least it can have done).
	// Without this, a burst's latest call was covered only once N
	// more calls had come, too late for the burst a window later.
	most = max(most, lastLate(samples, k, base))
	return most, least
}

// nthLatest returns the most, over the calls x admitted from from on
// (Unix ns), of the Nth latest arrival (upper bounds, as lateLeast's upper
// pass counts them) of the calls admitted up to the end of the window x
// opens, from x's admission: what a strict server needs of the margin
// (see oneWindow's over). Where x's window is not complete, the calls that
// will complete it are taken as arriving too late to keep it (trailing):
// its figure is then the kth latest of all, k the calls from x on. One pass
// with a heap of the N latest arrivals so far, so that an observation
// costs O(n log N) and allocates nothing once the heap has grown.
func (m *tracker) nthLatest(live []lagSample, from int64) time.Duration {
	const unknown = math.MaxInt64
	k, n := m.group, len(live)
	h := m.latest[:0] // a min-heap of the k latest arrivals so far
	defer func() { m.latest = h[:0] }()
	var most time.Duration
	for j := range live {
		s := &live[j]
		v := int64(unknown)
		if l, _ := m.lagOf(s, true); l != unknownLag {
			v = s.at + int64(l)
		}
		if s.at < from && v <= from {
			// Arrived before every x counted was admitted: were it among
			// the N latest, the Nth would come no later, and count for
			// nothing; left out, the heap may hold fewer than N (below).
			continue
		}
		switch {
		case len(h) < k:
			h = append(h, v)
			heapUp(h, len(h)-1)
		case v > h[0]:
			h[0] = v
			heapDown(h, 0)
		}
		if x := j - k + 1; x >= 0 && live[x].at >= from && len(h) == k {
			if h[0] == unknown {
				return unknownLag
			}
			most = max(most, time.Duration(h[0]-live[x].at))
		}
	}
	// The windows not complete: the (n-x)th latest of all for x.
	slices.Sort(h)
	for x := max(n-k+1, 0); x < n; x++ {
		if live[x].at < from || n-x > len(h) {
			continue
		}
		v := h[len(h)-(n-x)]
		if v == unknown {
			return unknownLag
		}
		most = max(most, time.Duration(v-live[x].at))
	}
	return most
}

// heapUp and heapDown keep h a min-heap after h[i] was added or raised.
func heapUp(h []int64, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p] <= h[i] {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func heapDown(h []int64, i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c+1] < h[c] {
			c++
		}
		if h[i] <= h[c] {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// trailing returns, for the upper pass, the most over the last k-1 calls
// (all, if fewer) of the least arrival of a call and those after it, from
// the call's admission. Their windows are not complete: as in the lower
// pass (lastLate), the calls that will complete them, not yet admitted,
// are taken as arriving too late to keep such a window. Without it a call
// that arrived late among the last counted only once N more calls had
// come, too late for them: they had been admitted a window after the
// calls before it. vals and ats are lateLeast's, from base.
func trailing(vals, ats []time.Duration, k int) time.Duration {
	var most time.Duration
	suffix := unknownLag
	for j := len(vals) - 1; j >= 0 && j > len(vals)-k; j-- {
		suffix = min(suffix, vals[j])
		most = max(most, lateFrom(suffix, ats[j]))
	}
	return most
}

// lagOf returns the lag that sample s counts with in lateLeast: the
// latest bound if upper (a call under way leaving m.underWay after its
// admission's latency), else the soonest; ok is false for a call under
// way, which the soonest bounds do not count.
func (m *tracker) lagOf(s *lagSample, upper bool) (l time.Duration, ok bool) {
	switch {
	case !upper && s.pending:
		return 0, false
	case !upper:
		return s.lo, true
	case s.pending:
		return s.latency + m.underWay, true
	}
	return m.hiOf(s), true
}

// hiOf returns when the call of sample s, ended, had arrived at the
// latest, from its admission.
func (m *tracker) hiOf(s *lagSample) time.Duration {
	if s.cut {
		return s.hi - m.cut
	}
	return s.hi
}

// lateLeastOne is lateLeast where a group holds every sample: the one
// window is the first call's, and the least over it needs no deque.
func (m *tracker) lateLeastOne(samples []lagSample, upper bool) (most, least time.Duration) {
	least = unknownLag
	var latest, stretched time.Duration
	var base int64
	n := 0
	first := unknownLag // the least arrival (or leaving), from base
	for i := range samples {
		s := &samples[i]
		l, ok := m.lagOf(s, upper)
		if !ok {
			continue
		}
		if !upper {
			least, latest, stretched = min(least, s.lo), max(latest, s.lo), max(stretched, s.stretch)
		}
		if n == 0 {
			base = s.at
		}
		n++
		if l != unknownLag {
			first = min(first, l+time.Duration(s.at-base))
		}
	}
	if !upper {
		m.underWay = latest + m.floor + stretched
	}
	if n == 0 {
		return 0, least
	}
	if upper {
		// No window is complete but perhaps the first call's: each
		// call's counts the calls after it (see trailing).
		suffix := unknownLag
		for j := len(samples) - 1; j >= 0; j-- {
			l, _ := m.lagOf(&samples[j], true)
			at := time.Duration(samples[j].at - base)
			if l != unknownLag {
				suffix = min(suffix, l+at)
			}
			most = max(most, lateFrom(suffix, at))
		}
		return most, least
	}
	// As in lateLeast: the last n calls, those under way included.
	return max(0, first, lastLate(samples, n, base)), least
}

// lastLate returns, over the last k samples (those under way counting as
// left at once), the most that the least leaving of a sample and those
// after it comes after the sample's admission; instants are from base.
func lastLate(samples []lagSample, k int, base int64) time.Duration {
	var most time.Duration
	suffix := unknownLag
	for j := len(samples) - 1; j >= 0 && j > len(samples)-k-1; j-- {
		lag := samples[j].lo
		if samples[j].pending {
			lag = 0
		}
		suffix = min(suffix, lag+time.Duration(samples[j].at-base))
		most = max(most, suffix-time.Duration(samples[j].at-base))
	}
	return most
}

// lateFrom returns v, an instant from base, from at (also from base), or
// unknownLag for unknownLag.
func lateFrom(v, at time.Duration) time.Duration {
	if v == unknownLag {
		return v
	}
	return v - at
}
