// Package margin adapts the margin a throttle.Backend adds to every
// rule's window to the lags it measures between a call's admission and
// its leaving, so that a server counting arrivals sees every rule kept
// while the margin stays as narrow as the lags allow.
//
// A caller tells a Tracker when a call was admitted (Started), when it
// never left (Forget), and, once it has ended, when it left and how long
// it ran (Observe), or when it left and when its answer came
// (ObserveAnswered); the Tracker sets the backend's margin.
package margin

import (
	"sync"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// Config configures a Tracker.
type Config struct {
	// Floor is the margin before anything is measured, and the most that
	// a call's end is trusted to prove: a caller whose calls end when
	// they have arrived (a curl waiting for its answer) may narrow below
	// it, down to Least; one that cannot tell keeps Least = Floor.
	Floor, Least time.Duration
	// Rules are the rules the backend keeps.
	Rules []throttle.Rule
	// Shared says that other processes admit through the same quota:
	// their calls are not seen here, so one late call can be enough for
	// a refusal.
	Shared bool
	// RoundTrip says that an Admission's Latency is half the round trip
	// to a remote store (Redis) plus the hand-over after the reply, an
	// estimate: a round trip longer than the least seen may have been
	// slow on its way back as well as out, so a call's lag is known only
	// give or take the excess over the least latency seen. The
	// hand-over, though exact, is not told apart, so its own variation
	// counts in the excess too: the margin errs wide by it, never short.
	// Otherwise Latency is measured on this machine's clock, and exact.
	RoundTrip bool
}

// ForStore returns c with Shared and RoundTrip set for a backend whose
// Stats name store (throttle.StoreStats.Name): a store is shared with
// other processes, and Redis's admissions carry half a round trip (and
// the hand-over after it).
func (c Config) ForStore(store string) Config {
	c.Shared, c.RoundTrip = store != "", store == "redis"
	return c
}

// Tracker adapts a backend's margin. The zero value is not usable: make
// one with New. It is safe for concurrent use.
type Tracker struct {
	b  throttle.Backend
	mu sync.Mutex
	t  *tracker
}

// New returns a tracker that sets b's margin, starting at c.Floor.
func New(b throttle.Backend, c Config) *Tracker {
	var longest time.Duration
	for _, r := range c.Rules {
		longest = max(longest, r.Window)
	}
	m := &Tracker{b: b, t: newTracker(c.Floor, c.Least, longest, group(c.Rules, c.Shared))}
	m.t.roundTrip = c.RoundTrip
	b.SetMargin(m.t.current)
	return m
}

// Started records a call admitted at at whose Admission had latency
// Latency: until it has ended, it counts as one that may arrive late.
func (m *Tracker) Started(at time.Time, latency time.Duration) {
	m.mu.Lock()
	m.t.started(at, latency)
	m.mu.Unlock()
}

// Forget drops the call admitted at at: it never left.
func (m *Tracker) Forget(at time.Time) {
	m.mu.Lock()
	m.t.forget(at)
	m.mu.Unlock()
}

// Observe records the lags of the call admitted at at, which has ended:
// it left lag after its admission, and ran for runtime after its
// admission returned (negative if the caller cannot tell that the call
// had arrived when it ended). It sets the backend's margin and returns
// the margin before and after.
func (m *Tracker) Observe(at time.Time, lag, runtime time.Duration) (before, after time.Duration) {
	return m.ObserveLoad(at, lag, runtime, Load{})
}

// ObserveLoad is Observe for a call made by a process whose scheduling is
// known: a busy machine stretches the start-up of a process, so the floor
// that a process is trusted to leave within once started is stretched too.
func (m *Tracker) ObserveLoad(at time.Time, lag, runtime time.Duration, load Load) (before, after time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before = m.t.current
	return m.set(before, m.t.observeLoad(time.Now(), at, lag, runtime, load))
}

// set gives the backend the margin after, if it moved from before, and
// returns both. It runs under m.mu, so that margins reach the backend in
// order.
func (m *Tracker) set(before, after time.Duration) (time.Duration, time.Duration) {
	if after != before {
		m.b.SetMargin(after)
	}
	return before, after
}

// ObserveAnswered records the lags of the call admitted at at whose answer
// came: it left lag after its admission and its answer came answered
// after it (both counting the admission's Latency, as Observe's lag), on
// a connection opened for it if newConn. For a server on this machine
// the answer bounds when the call was read better than a floor can: it
// shares the machine's CPUs, so a busy machine makes it read requests
// late, and a new connection waits, unseen, until it accepts it. For a
// server elsewhere, whose answer time is its own work, use Observe with
// the answer as the runtime. It sets the backend's margin and returns the
// margin before and after.
func (m *Tracker) ObserveAnswered(at time.Time, lag, answered time.Duration, newConn bool) (before, after time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before = m.t.current
	return m.set(before, m.t.observeAnswered(time.Now(), at, lag, answered, newConn))
}

// Load is what a busy machine did to the process that made a call: it ran
// on a CPU for CPU and waited for one, runnable, for Queued (on Linux,
// /proc/PID/schedstat). The zero Load says nothing.
type Load struct {
	CPU, Queued time.Duration
}

// stretch returns how much longer than floor the start-up of a process
// that saw l may have taken: floor stretched by the time it waited per
// CPU time it ran, but no more than it waited in all, nor than ceiling.
// A process that waited for a CPU while it started waited as it ran
// later; one that never waited was not slowed.
func (l Load) stretch(floor, ceiling time.Duration) time.Duration {
	if l.Queued <= 0 {
		return 0
	}
	s := l.Queued
	if l.CPU > 0 {
		s = min(s, time.Duration(float64(floor)*float64(l.Queued)/float64(l.CPU)))
	}
	return min(s, ceiling)
}

// Margin returns the margin now.
func (m *Tracker) Margin() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.t.current
}
