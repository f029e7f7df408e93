package margin

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/pace-cli/pace/throttle"
)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// call returns the admission instant of the ith call: 1ms apart.
func call(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }

// With one call per window, one late call is enough: the margin covers
// the whole spread of the lags pace saw, at once, over the floor (for
// pace fetch, least is the floor).
func TestMarginTrackerWholeSpread(t *testing.T) {
	m := newTracker(ms(10), ms(10), time.Second, 1)
	for i, tt := range []struct {
		lag, want float64
	}{
		{5, 10},  // one lag: no spread
		{8, 13},  // spread 3
		{20, 25}, // spread 15: widened at once
		{6, 25},  // within the spread
	} {
		if got := m.observe(call(i), call(i), ms(tt.lag), ms(tt.lag+1)); got != ms(tt.want) {
			t.Errorf("lag %vms: margin %v, want %vms", tt.lag, got, tt.want)
		}
	}
}

// Calls admitted together at one instant are told apart at the server by
// their arrivals alone: the burst admitted a window later can collide with
// the one of them that arrives last, whatever N. So the margin covers the
// burst's whole spread (pace proxy's first burst on new connections:
// lags from 0 to 66ms, then a burst on kept-alive ones).
func TestMarginTrackerBurst(t *testing.T) {
	lags := []float64{2, 30, 3, 25, 2, 40, 4, 9, 12, 10, 2}
	for _, group := range []int{1, 2, 3, 4, 5, 50} {
		m := newTracker(ms(10), ms(10), time.Second, group)
		for _, l := range lags {
			m.observe(t0, t0, ms(l), ms(l)) // a burst: all admitted at t0
		}
		if got := m.current; got != ms(10+40-2) {
			t.Errorf("group %d: margin %v, want 48ms: the floor and the burst's spread", group, got)
		}
	}
}

// With N calls per window admitted apart, even by a millisecond, a
// refusal needs all N to be late: the margin covers the largest least lag
// of N consecutive calls (each lag counted from the first's admission),
// and, for the last calls, of those they have.
func TestMarginTrackerGroup(t *testing.T) {
	lags := []float64{2, 30, 3, 25, 2, 40, 4, 9, 12, 10, 2}
	for _, tt := range []struct {
		group int
		want  float64 // the statistic; the margin is floor 10 + it - the least lag, 2
	}{
		{1, 40},
		{2, 11}, // 12, then 10 admitted 1ms later: 11
		{3, 9},  // 9, 12+1, 10+2
		{4, 5},  // 40, 4+1, 9+2, 12+3; or 9, 12+1, 10+2, 2+3
	} {
		m := newTracker(ms(10), ms(10), time.Second, tt.group)
		for i, l := range lags {
			m.observe(call(i), call(i), ms(l), ms(l))
		}
		if got, _ := m.lateLeast(m.samples, math.MinInt64, false); got != ms(tt.want) {
			t.Errorf("group %d: statistic %v, want %vms", tt.group, got, tt.want)
		}
	}
}

// Calls admitted apart need not all be late: the window the first opens
// holds the later ones anyway, so one late call that opens it is enough.
// The order of admission counts, not the order lags are reported in.
func TestMarginTrackerSpacedCalls(t *testing.T) {
	lags := []float64{50, 1, 1, 1, 1, 1} // admitted 100ms apart
	m := newTracker(ms(10), ms(10), time.Second, 5)
	for i := len(lags) - 1; i >= 0; i-- {
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		m.observe(t0.Add(time.Second), at, ms(lags[i]), ms(lags[i]))
	}
	if got := m.current; got != ms(10+50-1) {
		t.Errorf("margin %v, want 10ms + 49ms: the first call's lag alone", got)
	}
}

// For pace run, a job that ended soon after its admission proves its call
// arrived by then: with quick jobs the margin goes below the floor, to
// the bound (at least least plus what pace saw); a job still running, or
// one whose runtime says nothing, holds the floor after the latest leaving
// seen. The bound is counted from the admission: the next call may leave
// at once, sooner than any seen.
func TestMarginTrackerBound(t *testing.T) {
	m := newTracker(ms(50), ms(10), time.Second, 1)
	m.seen = 0 // compare the target, not the slow narrowing
	if got := m.observe(call(0), call(0), ms(1), ms(15)); got != ms(15) {
		t.Errorf("one job ended 15ms after admission, left 1ms after: margin %v, want 15ms", got)
	}
	m = newTracker(ms(50), ms(10), time.Second, 1)
	m.observe(call(0), call(0), ms(1), ms(2))
	m.seen = 0
	if got := m.observe(call(1), call(1), ms(2), ms(3)); got != ms(11) {
		t.Errorf("jobs ending at once: margin %v, want least 10ms + 1ms seen", got)
	}
	m.started(call(2), 0)
	if got := m.observe(call(3), call(3), ms(2), ms(3)); got != ms(52) {
		t.Errorf("a job under way: margin %v, want the floor after the latest leaving seen, 50ms + 2ms", got)
	}
	m.forget(call(2)) // it never left
	m.seen = 0
	if got := m.observe(call(4), call(4), ms(2), -1); got != ms(52) {
		t.Errorf("a runtime that bounds nothing: margin %v, want the floor after its leaving, 50ms + 2ms", got)
	}
	m = newTracker(ms(50), ms(10), time.Second, 1)
	m.observe(call(0), call(0), ms(1), ms(2))
	if got := m.observe(call(1), call(1), ms(80), ms(81)); got != ms(89) {
		t.Errorf("a call seen leaving 80ms late: margin %v, want least 10ms + 79ms", got)
	}
	// A slow job holds the margin up only while its call can still open a
	// window: a second (the window) and the margin later, quick jobs
	// bound it again.
	m = newTracker(ms(50), ms(10), time.Second, 1)
	m.observe(call(0), call(0), ms(1), ms(45))
	if got := m.observe(call(1), call(1), ms(1), ms(5)); got != ms(45) {
		t.Errorf("after a job of 45ms: margin %v, want 45ms", got)
	}
	later := t0.Add(1100 * time.Millisecond)
	if got := m.observe(later, later, ms(1), ms(5)); got != ms(10) {
		t.Errorf("once the slow call left every window: margin %v, want least 10ms", got)
	}
	// The latency of a remote admission counts in the bound, as in the lag.
	m = newTracker(ms(50), ms(10), time.Second, 1)
	m.seen = 0
	m.started(call(0), ms(3))
	if got := m.observe(call(0), call(0), ms(4), ms(20)); got != ms(23) {
		t.Errorf("runtime 20ms after a 3ms latency, lag 4ms: margin %v, want 3ms + 20ms", got)
	}
}

// On a busy machine a process starts slowly, after its exec has returned:
// pace cannot see its call leave, only how long it waited for a CPU. A
// job that ran long and waited stretches the floor it is trusted to leave
// within by the time it waited per CPU time it used (pace run + curl under
// load: curl's start-up took hundreds of milliseconds, and a margin held
// at the floor let calls through early); one that waited little does not.
func TestMarginTrackerLoad(t *testing.T) {
	for _, tt := range []struct {
		name    string
		load    Load
		want    float64
		because string
	}{
		// The lag, 1ms, then the floor, stretched.
		{"quiet long job", Load{CPU: ms(5), Queued: ms(0.5)}, 1 + 50 + 0.5, "waited 0.5ms in all"},
		{"no schedstat", Load{}, 1 + 50, "the floor"},
		{"curl on a loaded machine", Load{CPU: ms(10), Queued: ms(700)}, 1 + 50 + 700, "waited 700ms for a CPU"},
		{"cpu-bound on a saturated machine", Load{CPU: ms(3000), Queued: ms(6000)}, 1 + 50 + 100, "twice the floor: waited 2ms per ms run"},
		{"beyond the ceiling", Load{CPU: ms(1), Queued: 5 * time.Second}, 1500, "capped at half the longest window"},
	} {
		m := newTracker(ms(50), ms(10), 3*time.Second, 1)
		m.observe(call(0), call(0), ms(1), ms(2))
		if got := m.observeLoad(call(1), call(1), ms(1), 10*time.Second, tt.load); got != ms(tt.want) {
			t.Errorf("%s: margin %v, want %vms: %s", tt.name, got, tt.want, tt.because)
		}
	}
	// A call under way counts as stretched as much as the most stretched
	// call seen: the next burst is admitted before the slow ones end.
	m := newTracker(ms(50), ms(10), 3*time.Second, 1)
	m.observe(call(0), call(0), ms(1), ms(2))
	m.observeLoad(call(1), call(1), ms(1), ms(760), Load{CPU: ms(10), Queued: ms(700)})
	m.started(call(2), 0)
	m.observe(call(3), call(3), ms(1), ms(2)) // a quick one ends
	if got := m.current; got != ms(1+50+700) {
		t.Errorf("with a call under way after a stretched one: margin %v, want 751ms", got)
	}
}

// An answer bounds when a call reached the server: between its leaving
// and its answer. A call answered late may have been read late (a busy
// server reads what waits in its socket when it runs again), so the floor
// it is trusted to arrive within stretches by how much longer than the
// shortest its gap was; a server slow to answer every call says nothing;
// a call on a new connection, which the server accepts when it gets to
// it, is trusted with nothing but its answer. (A Redis fleet under load:
// requests read by the server 17 to 48ms after they were written, refused
// while the margin was capped at the floor.)
func TestMarginTrackerAnswered(t *testing.T) {
	for _, tt := range []struct {
		name           string
		first, second  float64 // each call's gap from leaving to answer
		newConn        bool
		want, previous float64 // the margin now, and with Observe's floor alone
	}{
		// Each call leaves 1ms after its admission; the next may leave
		// at once. With Observe, each arrived by 1ms + the floor.
		{"answered at once", 0.5, 0.5, false, 10, 10},
		{"read 19ms late", 0.5, 19, false, 20, 11}, // answered 20ms after its admission
		{"a slow server, every call", 200, 200, false, 11, 11},
		{"a slow server, one call slower", 30, 45, false, 26, 11},
		{"a slow server, a new connection", 30, 45, true, 46, 11},
	} {
		m, old := newTracker(ms(10), ms(10), time.Second, 1), newTracker(ms(10), ms(10), time.Second, 1)
		for i, gap := range []float64{tt.first, tt.second} {
			m.started(call(i), 0)
			m.observeAnswered(call(i), call(i), ms(1), ms(1+gap), tt.newConn && i == 1)
			old.started(call(i), 0)
			old.observe(call(i), call(i), ms(1), ms(1+gap))
		}
		if m.current != ms(tt.want) || old.current != ms(tt.previous) {
			t.Errorf("%s: margin %v (with Observe %v), want %vms (%vms)", tt.name, m.current, old.current, tt.want, tt.previous)
		}
	}
}

// A late call among the last ones opens a window that calls not yet
// admitted will complete, and they may all be late too: the margin covers
// it at once, not once N more calls have come (too late: they have been
// admitted). pace proxy's clients on a loaded
// machine, 5/s AND 12/3s: one request read by the server 995ms after its
// admission, the next four admitted 1.4s after it, the sixth refused.
func TestMarginTrackerLateLastCall(t *testing.T) {
	for _, group := range []int{5, 50} {
		m := newTracker(ms(10), ms(10), 3*time.Second, group)
		at := func(v float64) time.Time { return t0.Add(ms(v)) }
		for _, c := range []struct{ at, lag, answered float64 }{
			{0, 1.6, 3.2}, {1090.2, 64.9, 215}, {1445.1, 75.6, 1028.1},
		} {
			m.started(at(c.at), 0)
			m.observeAnswered(at(c.at+c.answered), at(c.at), ms(c.lag), ms(c.answered), false)
		}
		// The late call arrived by 1028.1ms after its admission; a call
		// admitted from now on may arrive at once.
		if got, want := m.current, ms(1028.1); got != want {
			t.Errorf("group %d: margin %v after a call answered 1028ms late, want %v", group, got, want)
		}
	}
}

// The quickest answer says how long the server takes at the least once it
// has read a call; a run that starts on a busy machine sees slow answers
// only, and the quick ones that come later show that all were read late:
// the calls seen before count again with the least gap of now. (pace
// proxy's clients under load: every answer in the first second took 14ms
// or more, and a call read 153ms after it left was taken to have arrived
// 4ms sooner; the twelfth call after it was refused.)
func TestMarginTrackerCutFollowsQuickest(t *testing.T) {
	m := newTracker(ms(10), ms(10), 3*time.Second, 1)
	at := func(v float64) time.Time { return t0.Add(ms(v)) }
	for _, c := range []struct{ at, lag, answered, want float64 }{
		{0, 0.2, 14.6, 14.6 - 4.4},    // the quickest so far: 14.4ms, a cut of 4.4ms
		{1, 17.8, 172.6, 172.6 - 4.4}, // arrived by its answer less 4.4ms
		{1000, 0.2, 0.3, 172.6},       // the quickest now 0.1ms: no cut
	} {
		m.started(at(c.at), 0)
		if got := m.observeAnswered(at(c.at+c.answered), at(c.at), ms(c.lag), ms(c.answered), false); got != ms(c.want) {
			t.Errorf("call at %vms answered %vms after: margin %v, want %vms", c.at, c.answered, got, c.want)
		}
	}
}

// The calls seen so far say nothing of how soon the next one leaves: a
// run's first burst goes out on new connections, which it must dial, and
// the calls after it on kept-alive ones. So the margin covers when a call
// arrived at the latest from its admission, not from the soonest leaving
// seen. (pace fetch -j 4 under cost:100/s, the test process's strict
// server on a loaded machine: four calls admitted within 12ms left 8 to
// 13ms after their admissions and were answered 67 to 79ms after; the
// fifth, admitted a window and 71.5ms after the first, left 1ms after
// its admission, arrived 1.5ms after it, 998ms after the first, and was
// refused.)
func TestMarginTrackerNextLeavesAtOnce(t *testing.T) {
	m := newTracker(ms(10), ms(10), time.Second, 1) // a cost rule: one late call is enough
	at := func(v float64) time.Time { return t0.Add(ms(v)) }
	burst := []struct{ at, lag, answered float64 }{
		{0, 12.976, 78.593}, {0.896, 11.832, 75.937}, {10.792, 7.992, 67.348}, {11.632, 8.362, 67.090},
	}
	for _, c := range burst {
		m.started(at(c.at), 0)
	}
	for _, c := range burst {
		m.observeAnswered(at(c.at+c.answered), at(c.at), ms(c.lag), ms(c.answered), true)
	}
	// The first call arrived by 78.593ms after its admission, and the
	// next may arrive at once after its own.
	if got, want := m.current, ms(78.593); got != want {
		t.Errorf("margin %v after the first burst, want %v: the latest answer from its admission", got, want)
	}
	// The server's view: the next call, admitted a window plus the margin
	// after the first, arriving 0.5ms after its admission, and the burst
	// arriving by their answers.
	rules := []throttle.Rule{{N: 100, Window: time.Second, Cost: true}}
	var calls []throttle.Call
	costs := []int{10, 20, 60, 5}
	for i, c := range burst {
		calls = append(calls, throttle.Call{At: at(c.at + c.answered), Cost: costs[i]})
	}
	calls = append(calls, throttle.Call{At: t0.Add(time.Second + m.current + ms(0.5)), Cost: 15})
	for _, r := range throttle.Check(rules, calls) {
		if r.Violations > 0 {
			t.Errorf("the server sees %v broken by %d call(s), peak %d", r.Rule, r.Violations, r.Peak)
		}
	}
}

// A remote admission's latency is half its round trip. A round trip far
// longer than the least seen (a Redis reply that took 66ms of a usual
// 0.2ms) may have been slow on its way back: the call's lag, counted with
// half, is only known give or take the excess, and the margin covers both
// ends.
func TestMarginTrackerLatencyExcess(t *testing.T) {
	m := newTracker(ms(10), ms(10), time.Second, 1)
	m.roundTrip = true
	m.started(call(0), ms(0.1))
	m.observeAnswered(call(0), call(0), ms(0.2), ms(0.7), false)
	m.started(call(1), ms(33))
	got := m.observeAnswered(call(1), call(1), ms(33.1), ms(33.6), false)
	// Left between 0.2ms and 66ms after its admission, answered 0.5ms
	// after: arrived by 66.5ms.
	if want := ms(66.5); got != want {
		t.Errorf("after a round trip of 66ms: margin %v, want %v", got, want)
	}
	// The same for pace run's bound from a job's end.
	m = newTracker(ms(10), ms(10), time.Second, 1)
	m.roundTrip = true
	m.started(call(0), ms(0.1))
	m.observe(call(0), call(0), ms(0.2), ms(5))
	m.started(call(1), ms(33))
	got = m.observe(call(1), call(1), ms(33.1), ms(1))
	// Ended 1ms after its admission returned, itself up to 66ms after
	// the call was recorded: arrived by 33 + 32.9 + 1ms.
	if want := ms(33 + 32.9 + 1); got != want {
		t.Errorf("pace run after a round trip of 66ms: margin %v, want %v", got, want)
	}
	// A latency on this machine's clock is exact: no excess, the call
	// left 33.1ms after its record, and the margin covers the spread of
	// the lags over the floor.
	m = newTracker(ms(10), ms(10), time.Second, 1)
	m.started(call(0), ms(0.1))
	m.observeAnswered(call(0), call(0), ms(0.2), ms(0.7), false)
	m.started(call(1), ms(33))
	if got, want := m.observeAnswered(call(1), call(1), ms(33.1), ms(33.6), false), ms(10)+ms(33.1)-ms(0.2); got != want {
		t.Errorf("after an admission that returned 33ms after its record: margin %v, want %v", got, want)
	}
}

// Late calls leave the span they count for, and the margin narrows by an
// eighth of the difference per call (at least 1ms), never below the floor.
func TestMarginTrackerNarrows(t *testing.T) {
	m := newTracker(ms(10), ms(10), time.Second, 1)
	m.observe(t0, t0, ms(1), ms(1))
	if got := m.observe(t0, t0, ms(81), ms(81)); got != ms(90) {
		t.Fatalf("margin %v after a spread of 80ms, want 90ms", got)
	}
	at := t0.Add(11 * time.Second) // the span is 10s: both lags are gone
	if got := m.observe(at, at, ms(1), ms(1)); got != ms(80) {
		t.Errorf("margin %v after the late call left, want 90ms - 80ms/8 = 80ms", got)
	}
	prev := ms(80)
	for range 100 {
		got := m.observe(at, at, ms(1), ms(1))
		if got > prev || got < ms(10) {
			t.Fatalf("margin %v after %v: want narrowing towards 10ms", got, prev)
		}
		prev = got
	}
	if prev != ms(10) {
		t.Errorf("margin %v after 100 quiet calls, want the floor, 10ms", prev)
	}
}

// The margin never exceeds half the longest window (docs/design.md), nor
// the floor where that is more.
func TestMarginTrackerCeiling(t *testing.T) {
	for _, tt := range []struct {
		floor, longest, want time.Duration
	}{
		{ms(10), time.Second, 500 * time.Millisecond},
		{ms(10), 10 * time.Second, 5 * time.Second},
		{ms(50), ms(60), ms(50)},
		{ms(10), time.Hour, time.Minute},
	} {
		m := newTracker(tt.floor, tt.floor, tt.longest, 1)
		m.observe(t0, t0, 0, 0)
		if got := m.observe(t0, t0, 5*time.Minute, 5*time.Minute); got != tt.want {
			t.Errorf("floor %v, longest window %v: margin %v after a 5m lag, want the ceiling %v", tt.floor, tt.longest, got, tt.want)
		}
	}
}

func TestMarginGroup(t *testing.T) {
	for _, tt := range []struct {
		spec   string
		shared bool
		want   int
	}{
		{"5/s,12/3s", false, 5},
		{"100/m,10/s", false, 10},
		{"5/s,12/3s", true, 1},
		{"5/s,cost:100/s", false, 1},
		{"", false, 1},
	} {
		var rs []throttle.Rule
		if tt.spec != "" {
			var err error
			if rs, err = throttle.ParseRules(tt.spec); err != nil {
				t.Fatal(err)
			}
		}
		if got := group(rs, tt.shared); got != tt.want {
			t.Errorf("group(%s, shared %v) = %d, want %d", tt.spec, tt.shared, got, tt.want)
		}
	}
}

// BenchmarkMarginTrackerFull measures one observation with the tracker
// holding as many samples as it keeps (a fast run with a long window).
func BenchmarkMarginTrackerFull(b *testing.B) {
	m := newTracker(ms(50), ms(10), time.Minute, 5)
	at := t0
	for i := range maxLagSamples {
		at = t0.Add(time.Duration(i) * time.Millisecond)
		m.observe(at, at, ms(float64(1+i%7)), ms(float64(20+i%13)))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		at = at.Add(time.Millisecond)
		m.started(at, 0)
		m.observe(at, at, ms(float64(1+i%7)), ms(float64(20+i%13)))
	}
}

// The tracker's observations, made cheaper, give the margins the
// straightforward recomputation gave (refTracker), over random runs:
// calls started, forgotten and observed out of order, bursts at one
// instant, long and short windows, groups of 1 to more than the samples.
func TestTrackerMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	maxLen := 0
	for run := range 12 {
		floor := ms(float64(1 + rng.IntN(50)))
		least := floor
		if rng.IntN(2) == 0 {
			least = ms(float64(rng.IntN(20)))
		}
		longest := []time.Duration{ms(50), time.Second, time.Minute}[rng.IntN(3)]
		group := []int{1, 2, 5, 50, 100000}[rng.IntN(5)]
		m, ref := newTracker(floor, least, longest, group), newRefTracker(floor, least, longest, group)
		m.roundTrip = rng.IntN(2) == 0
		ref.roundTrip = m.roundTrip
		now := t0
		var pending []time.Time
		for step := range 3000 {
			now = now.Add(time.Duration(rng.IntN(3000)) * time.Microsecond)
			if rng.IntN(500) == 0 {
				now = now.Add(time.Duration(rng.IntN(20)) * time.Second) // samples leave the span
			}
			switch r := rng.IntN(10); {
			case r < 5 || len(pending) == 0:
				at := now
				if rng.IntN(4) == 0 && len(pending) > 0 {
					at = pending[len(pending)-1] // a burst: the same instant
				}
				lat := time.Duration(rng.IntN(3)) * time.Millisecond
				if rng.IntN(10) == 0 {
					lat += time.Duration(rng.IntN(60)) * time.Millisecond // a slow round trip
				}
				m.started(at, lat)
				ref.started(at, lat)
				pending = append(pending, at)
			case r == 4:
				i := rng.IntN(len(pending))
				m.forget(pending[i])
				ref.forget(pending[i])
				pending = append(pending[:i], pending[i+1:]...)
			default:
				i := rng.IntN(len(pending))
				at := pending[i]
				pending = append(pending[:i], pending[i+1:]...)
				lag := time.Duration(rng.ExpFloat64() * float64(3*time.Millisecond))
				runtime := lag + time.Duration(rng.IntN(20_000))*time.Microsecond
				if rng.IntN(8) == 0 {
					runtime = -1
				}
				if rng.IntN(20) == 0 {
					at = now // never started
				}
				var load Load
				if rng.IntN(3) == 0 {
					load = Load{CPU: time.Duration(rng.IntN(5000)) * time.Microsecond, Queued: time.Duration(rng.IntN(20_000)) * time.Microsecond}
				}
				var got, want time.Duration
				if rng.IntN(3) == 0 {
					answered := lag + time.Duration(rng.ExpFloat64()*float64(2*time.Millisecond))
					newConn := rng.IntN(6) == 0
					got, want = m.observeAnswered(now, at, lag, answered, newConn), ref.observeAnswered(now, at, lag, answered, newConn)
				} else {
					got, want = m.observeLoad(now, at, lag, runtime, load), ref.observeLoad(now, at, lag, runtime, load)
				}
				maxLen = max(maxLen, len(m.samples))
				if got != want {
					t.Fatalf("run %d (floor %v, least %v, window %v, group %d), step %d: margin %v, want %v",
						run, floor, least, longest, group, step, got, want)
				}
			}
		}
	}
	if maxLen <= maxLagSamples {
		t.Errorf("the tracker held at most %d samples: the cap, %d, was not reached", maxLen, maxLagSamples)
	}
}

// As TestTrackerMatchesReference for runs like pace fetch's: a few calls
// in flight, ending mostly in the order they started, so that the samples
// before those under way have ended and oneWindow reads them from its
// blocks (blockHits counts them).
func TestTrackerMatchesReferenceInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	hits := 0
	for run := range 6 {
		floor := ms(float64(1 + rng.IntN(20)))
		least := []time.Duration{floor, ms(float64(rng.IntN(10)))}[rng.IntN(2)]
		longest := []time.Duration{ms(20), ms(50), time.Second}[rng.IntN(3)]
		group := []int{2000, 100000}[rng.IntN(2)]
		m, ref := newTracker(floor, least, longest, group), newRefTracker(floor, least, longest, group)
		m.roundTrip = rng.IntN(2) == 0
		ref.roundTrip = m.roundTrip
		inFlight := 1 + rng.IntN(40)
		now := t0
		var pending []time.Time
		for step := range 3000 {
			now = now.Add(time.Duration(rng.IntN(200)) * time.Microsecond)
			if rng.IntN(2000) == 0 {
				now = now.Add(time.Duration(rng.IntN(20)) * time.Second) // samples leave the span
			}
			if len(pending) < inFlight && rng.IntN(3) > 0 {
				at := now
				if rng.IntN(8) == 0 && len(pending) > 0 {
					at = pending[len(pending)-1] // a burst: the same instant
				}
				lat := time.Duration(rng.IntN(300)) * time.Microsecond
				m.started(at, lat)
				ref.started(at, lat)
				pending = append(pending, at)
				continue
			}
			if len(pending) == 0 {
				continue
			}
			i := rng.IntN(min(len(pending), 3)) // mostly the oldest
			if rng.IntN(50) == 0 {
				i = rng.IntN(len(pending))
			}
			at := pending[i]
			pending = append(pending[:i], pending[i+1:]...)
			if rng.IntN(100) == 0 {
				m.forget(at)
				ref.forget(at)
				continue
			}
			lag := time.Duration(rng.ExpFloat64() * float64(300*time.Microsecond))
			var got, want time.Duration
			if rng.IntN(4) > 0 {
				answered := lag + time.Duration(rng.ExpFloat64()*float64(500*time.Microsecond))
				newConn := rng.IntN(40) == 0
				got, want = m.observeAnswered(now, at, lag, answered, newConn), ref.observeAnswered(now, at, lag, answered, newConn)
			} else {
				runtime := lag + time.Duration(rng.IntN(2000))*time.Microsecond
				got, want = m.observe(now, at, lag, runtime), ref.observe(now, at, lag, runtime)
			}
			if got != want {
				t.Fatalf("run %d (floor %v, least %v, window %v, group %d, in flight %d), step %d: margin %v, want %v",
					run, floor, least, longest, group, inFlight, step, got, want)
			}
		}
		hits += m.blockHits
	}
	if hits == 0 {
		t.Error("oneWindow read no block: the test does not cover them")
	}
	if testing.Verbose() {
		t.Logf("blocks read: %d", hits)
	}
}

// BenchmarkMarginTrackerFetch is BenchmarkMarginTrackerFull for pace
// fetch, whose least is the floor, under a rule that never binds (a group
// larger than the samples kept).
func BenchmarkMarginTrackerFetch(b *testing.B) {
	m := newTracker(ms(10), ms(10), time.Second, 100000)
	at := t0
	for i := range maxLagSamples {
		at = t0.Add(time.Duration(i) * 100 * time.Microsecond)
		m.observe(at, at, ms(float64(1+i%7)/10), ms(float64(20+i%13)/10))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		at = at.Add(100 * time.Microsecond)
		m.started(at, 0)
		m.observe(at, at, ms(float64(1+i%7)/10), ms(float64(20+i%13)/10))
	}
}

func BenchmarkRefTrackerFetch(b *testing.B) {
	m := newRefTracker(ms(10), ms(10), time.Second, 100000)
	at := t0
	for i := range maxLagSamples {
		at = t0.Add(time.Duration(i) * 100 * time.Microsecond)
		m.observe(at, at, ms(float64(1+i%7)/10), ms(float64(20+i%13)/10))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		at = at.Add(100 * time.Microsecond)
		m.started(at, 0)
		m.observe(at, at, ms(float64(1+i%7)/10), ms(float64(20+i%13)/10))
	}
}

func BenchmarkRefTrackerFull(b *testing.B) {
	m := newRefTracker(ms(50), ms(10), time.Minute, 5)
	at := t0
	for i := range maxLagSamples {
		at = t0.Add(time.Duration(i) * time.Millisecond)
		m.observe(at, at, ms(float64(1+i%7)), ms(float64(20+i%13)))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		at = at.Add(time.Millisecond)
		m.started(at, 0)
		m.observe(at, at, ms(float64(1+i%7)), ms(float64(20+i%13)))
	}
}

// A store is shared; only Redis's latencies are half round trips.
func TestConfigForStore(t *testing.T) {
	for _, tt := range []struct {
		store             string
		shared, roundTrip bool
	}{{"", false, false}, {"local", true, false}, {"redis", true, true}} {
		if c := (Config{Floor: ms(10)}).ForStore(tt.store); c.Shared != tt.shared || c.RoundTrip != tt.roundTrip || c.Floor != ms(10) {
			t.Errorf("ForStore(%q) = %+v, want Shared %v, RoundTrip %v, the rest kept", tt.store, c, tt.shared, tt.roundTrip)
		}
	}
}

// Whatever the order calls arrive in, the margin covers what a strict
// server needs: for the next call B under N per W, admitted a window and
// the margin after the Nth call before it, the N calls before B that
// arrive latest must not all arrive within the window before B. So for
// every call x that can be the Nth before a call to come, the margin
// covers the Nth latest arrival of the calls admitted up to x's window's
// end (with those not yet admitted taken as arriving too late to help),
// from x's admission. Checked by brute force over random schedules
// admitted apart, each call's arrival bound its observed lag; calls
// admitted before x and arriving late count as much as x's own (the case
// seen at load 10: TestMarginTrackerOvertaken's fixed one).
func TestMarginTrackerCoversArrivalOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 7))
	for trial := range 3000 {
		group := 1 + rng.IntN(6)
		n := 1 + rng.IntN(12)
		m := newTracker(ms(10), ms(10), 10*time.Second, group)
		ats := make([]time.Duration, n)
		lags := make([]time.Duration, n)
		var a time.Duration
		for i := range n {
			a += time.Duration(1+rng.IntN(4)) * 500 * time.Microsecond
			ats[i], lags[i] = a, ms(float64(rng.IntN(60)))
		}
		now := t0.Add(time.Second)
		for _, i := range rng.Perm(n) {
			m.observe(now, t0.Add(ats[i]), lags[i], lags[i])
		}
		need := requiredMargin(ats, lags, group)
		if got := m.nthLatest(m.samples, math.MinInt64); group < n && got != need {
			// Exact where a window is complete: no wider than needed.
			t.Fatalf("trial %d, N %d, admitted %v, lags %v: Nth latest %v, want %v", trial, group, ats, lags, got, need)
		}
		if m.current < min(need, m.ceiling) {
			t.Fatalf("trial %d, N %d, admitted %v, lags %v: margin %v, a strict server needs %v", trial, group, ats, lags, m.current, need)
		}
	}
}

// requiredMargin is the margin a strict server needs for the calls
// admitted at ats (rising) that arrive lags after: the most, over every x,
// of the rth latest arrival of the calls admitted up to x's window's end,
// r = min(N, calls from x on), from x's admission.
func requiredMargin(ats, lags []time.Duration, group int) time.Duration {
	var need time.Duration
	for x := range ats {
		end := min(x+group, len(ats))
		arrivals := make([]time.Duration, end)
		for i := range end {
			arrivals[i] = ats[i] + lags[i]
		}
		slices.Sort(arrivals)
		r := end - x
		need = max(need, arrivals[end-r]-ats[x])
	}
	return need
}

// The case seen at load 10 on 2 cores: pace fetch -j 4 under 4/500ms
// admitted calls 1 to 4 within 4 ms, 1 to 3 arrived about 29 ms after
// their admissions and 4 after 4 ms; the call a window after call 2 was
// refused at a margin of 23 ms. Calls 1, 2, 3 and 5 were within the
// window before it: the margin must cover call 1's arrival, from call 2's
// admission.
func TestMarginTrackerOvertaken(t *testing.T) {
	m := newTracker(ms(10), ms(10), time.Second, 4)
	now := t0.Add(100 * time.Millisecond)
	for _, c := range []struct{ at, lag float64 }{{0, 30.3}, {1.5, 28.5}, {1.8, 27.7}, {3.9, 3.9}} {
		m.observe(now, t0.Add(ms(c.at)), ms(c.lag), ms(c.lag))
	}
	if want := ms(30.3 - 1.5); m.current < want {
		t.Errorf("margin %v, want at least %v: call 1 arrives %v after call 2's admission", m.current, want, want)
	}
}

// BenchmarkMarginTrackerFetchInFlight is BenchmarkMarginTrackerFetch as
// pace fetch -j 32 runs it: 32 calls under way, admitted 60µs apart and
// answered out of order, on kept-alive connections to a local server.
func BenchmarkMarginTrackerFetchInFlight(b *testing.B) {
	m := newTracker(ms(10), ms(10), time.Second, 100000)
	rng := rand.New(rand.NewPCG(3, 4))
	var pending []time.Time
	at := t0
	step := func() {
		at = at.Add(60 * time.Microsecond)
		m.started(at, time.Duration(rng.IntN(20))*time.Microsecond)
		pending = append(pending, at)
		if len(pending) < 32 {
			return
		}
		i := rng.IntN(4) // mostly the oldest: answers come back nearly in order
		done := pending[i]
		pending = append(pending[:i], pending[i+1:]...)
		lag := time.Duration(30+rng.IntN(60)) * time.Microsecond
		m.observeAnswered(at, done, lag, lag+time.Duration(80+rng.IntN(200))*time.Microsecond, false)
	}
	for range 4 * maxLagSamples {
		step()
	}
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}

// A call that arrives late, the last of a block, counts against the call
// admitted after it, the first of the next block (the overtaken figure),
// once both blocks are summarised: a server counting arrivals may see it
// in the window that call opens.
func TestTrackerOvertakenAcrossBlock(t *testing.T) {
	const calls = 2*blockSize + 8
	m, ref := newTracker(ms(1), ms(1), time.Second, 100000), newRefTracker(ms(1), ms(1), time.Second, 100000)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Millisecond) }
	for i := range calls {
		m.started(at(i), 0)
		ref.started(at(i), 0)
	}
	now := at(calls)
	var got time.Duration
	for i := range calls {
		answered := time.Duration(0)
		if i == blockSize-1 {
			answered = ms(100) // read late by the server: answered 100ms after leaving
		}
		got = m.observeAnswered(now, at(i), 0, answered, false)
		if want := ref.observeAnswered(now, at(i), 0, answered, false); got != want {
			t.Fatalf("observeAnswered(call %d) = %v, want %v", i, got, want)
		}
	}
	if m.blockHits == 0 {
		t.Error("oneWindow read no block: the test does not cover them")
	}
	// Call 31 arrived 100ms after its admission, 99ms after call 32's.
	if want := ms(99); got != want {
		t.Errorf("margin = %v, want %v", got, want)
	}
}

// The figures of a block that every observation reads come before its
// arrays and fill two cache lines (see block): a field added among them,
// or moved after the arrays, costs a line read per block and observation.
func TestBlockFiguresFillTwoLines(t *testing.T) {
	var b block
	if got := unsafe.Offsetof(b.sufB); got != 128 {
		t.Errorf("the arrays of a block start at byte %d, want 128", got)
	}
	if got := unsafe.Sizeof(b) % 64; got != 0 {
		t.Errorf("a block is %d bytes, %d past a cache line", unsafe.Sizeof(b), got)
	}
}
