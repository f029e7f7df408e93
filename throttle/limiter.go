package throttle

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Limiter keeps several rate rules at once, plus an optional cap on calls
// in flight. It is the combined limiter at the heart of pace.
//
// An admission asks every rule how long the caller must wait, sleeps for
// the longest of those waits, asks again (another rule may have moved),
// and only when every rule allows the call records it in all of them with
// one timestamp. Stacking one limiter per rule is subtly wrong: each would
// record the call when it alone admitted it, before the call really goes
// out, and so let later calls through too soon.
//
// Admission is FIFO: a caller is never overtaken by one that came later.
// A caller whose context ends while it waits consumes nothing and delays
// nobody. Waiting is on timers from the limiter's Clock; nothing spins.
//
// Most callers want Acquire, which takes an in-flight slot (when
// WithMaxInFlight set a cap), then waits for the rates, and returns the
// function that gives the slot back. Wait waits for the rates only; Do runs
// a function under the gate.
//
// A Limiter must be made with New. It is safe for concurrent use.
type Limiter struct {
	clock  Clock
	rules  []Rule
	margin time.Duration
	slots  *slots

	mu      sync.Mutex
	epoch   time.Time // instant 0 of the internal timeline
	offset  int64     // added to clock readings so the timeline never runs back
	last    int64     // latest instant seen on the internal timeline
	windows []window
	queue   []*waiter // FIFO; queue[0] is the only one allowed to sleep on the rules
	pause   int64     // no admission before this instant
	reason  string    // why the current pause was set
	stats   stats
	started bool // an admission or a Seed has happened
}

// waiter is a caller queued for admission.
type waiter struct {
	ready   chan struct{} // closed when the waiter becomes the head
	arrived int64
}

// Option configures a Limiter.
type Option func(*config)

type config struct {
	clock        Clock
	margin       time.Duration
	maxInFlight  int
	counterAbove int
}

// WithClock makes the limiter take time from c instead of the system clock.
func WithClock(c Clock) Option { return func(cf *config) { cf.clock = c } }

// WithMargin adds d to every rule's window, so that a server whose clock or
// counting differs a little from the limiter's still sees every rule kept.
// The default is 0: the limiter alone is exact, and the margin a caller
// needs depends on the jitter between admission and arrival (see
// docs/design.md). A negative d is treated as 0.
func WithMargin(d time.Duration) Option { return func(cf *config) { cf.margin = max(d, 0) } }

// WithMaxInFlight caps the calls in flight at n: Acquire takes one of n
// slots before it waits for the rates. n <= 0 means no cap.
func WithMaxInFlight(n int) Option { return func(cf *config) { cf.maxInFlight = n } }

// WithCounterAbove keeps every rule with N > n in a bounded-memory sliding
// window counter instead of an exact log. The default is CounterAbove;
// WithCounterAbove(0) uses counters for all rules.
func WithCounterAbove(n int) Option { return func(cf *config) { cf.counterAbove = n } }

// New returns a limiter keeping all rules. An empty rule set limits only
// the calls in flight (if capped).
func New(rules []Rule, opts ...Option) (*Limiter, error) {
	cf := config{clock: SystemClock(), counterAbove: CounterAbove}
	for _, o := range opts {
		o(&cf)
	}
	if err := validate(rules); err != nil {
		return nil, err
	}
	l := &Limiter{
		clock:  cf.clock,
		rules:  append([]Rule(nil), rules...),
		margin: cf.margin,
		slots:  newSlots(cf.maxInFlight),
		epoch:  cf.clock.Now(),
	}
	l.stats.rules = make([]ruleStat, len(rules))
	for _, r := range rules {
		w := int64(r.Window + cf.margin)
		if r.N > cf.counterAbove {
			l.windows = append(l.windows, newSlidingCounter(r.N, w, counterBuckets))
		} else {
			l.windows = append(l.windows, newSlidingLog(r.N, w))
		}
	}
	return l, nil
}

// Rules returns the limiter's rules.
func (l *Limiter) Rules() []Rule { return append([]Rule(nil), l.rules...) }

// Margin returns the margin added to every window.
func (l *Limiter) Margin() time.Duration { return l.margin }

// internalLocked maps t onto the internal timeline. An instant earlier than
// one already seen is taken as that one, and later instants are shifted by
// the difference, so the timeline never runs backwards: a clock that steps
// back neither admits early nor stalls for the step. Requires l.mu held.
func (l *Limiter) internalLocked(t time.Time) int64 {
	ns := int64(t.Sub(l.epoch)) + l.offset
	if ns < l.last {
		l.offset += l.last - ns
		ns = l.last
	}
	l.last = ns
	return ns
}

// toTime maps an internal instant back to wall time. Requires l.mu held.
func (l *Limiter) toTime(ns int64) time.Time {
	return l.epoch.Add(time.Duration(ns - l.offset))
}

// delayLocked returns how long a caller at now must wait and why: the
// index of the rule with the longest wait, or bindPause. Requires l.mu held.
func (l *Limiter) delayLocked(now int64) (int64, int) {
	var d int64
	why := bindNone
	if p := l.pause - now; p > 0 {
		d, why = p, bindPause
	}
	for i, w := range l.windows {
		if wd := w.delay(now); wd > d {
			d, why = wd, i
		}
	}
	return d, why
}

// admitLocked records a call at now in every rule. Requires l.mu held and
// delayLocked(now) == 0.
func (l *Limiter) admitLocked(now, arrived int64) {
	l.started = true
	for i, w := range l.windows {
		w.record(now)
		l.stats.rules[i].observe(w.count(now))
	}
	l.stats.admit(now - arrived)
}

// Wait blocks until every rule admits one more call and records it, or
// until ctx is done. It does not take an in-flight slot.
func (l *Limiter) Wait(ctx context.Context) error {
	_, err := l.wait(ctx)
	return err
}

// wait is Wait returning the instant the call was recorded at.
func (l *Limiter) wait(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	l.mu.Lock()
	now := l.internalLocked(l.clock.Now())
	if len(l.queue) == 0 {
		if d, _ := l.delayLocked(now); d == 0 {
			l.admitLocked(now, now)
			at := l.toTime(now)
			l.mu.Unlock()
			return at, nil
		}
	}
	w := &waiter{ready: make(chan struct{}), arrived: now}
	l.queue = append(l.queue, w)
	head := len(l.queue) == 1
	l.mu.Unlock()

	if !head {
		select {
		case <-w.ready:
		case <-ctx.Done():
			l.mu.Lock()
			l.leaveLocked(w)
			l.mu.Unlock()
			return time.Time{}, ctx.Err()
		}
	}
	return l.waitAsHead(ctx, w)
}

// waitAsHead sleeps on the rules until they admit w, the head of the
// queue, and returns the instant the call was recorded at.
func (l *Limiter) waitAsHead(ctx context.Context, w *waiter) (time.Time, error) {
	for {
		l.mu.Lock()
		now := l.internalLocked(l.clock.Now())
		d, why := l.delayLocked(now)
		if d == 0 {
			l.admitLocked(now, w.arrived)
			l.leaveLocked(w)
			at := l.toTime(now)
			l.mu.Unlock()
			return at, nil
		}
		l.stats.blockedOn(why)
		l.mu.Unlock()

		t := l.clock.NewTimer(time.Duration(d))
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			l.mu.Lock()
			l.leaveLocked(w)
			l.mu.Unlock()
			return time.Time{}, ctx.Err()
		}
	}
}

// leaveLocked removes w from the queue and, if w was the head, wakes the
// next waiter. Requires l.mu held.
func (l *Limiter) leaveLocked(w *waiter) {
	for i, q := range l.queue {
		if q != w {
			continue
		}
		copy(l.queue[i:], l.queue[i+1:])
		l.queue[len(l.queue)-1] = nil
		l.queue = l.queue[:len(l.queue)-1]
		if i == 0 && len(l.queue) > 0 {
			close(l.queue[0].ready)
		}
		return
	}
}

// Acquire takes an in-flight slot (waiting FIFO for one if the cap is
// reached), then waits for the rates. It returns the function that gives
// the slot back; call it once the call has finished. Calling it more than
// once has no further effect. If ctx ends first, Acquire returns ctx's
// error and holds nothing.
func (l *Limiter) Acquire(ctx context.Context) (release func(), err error) {
	_, release, err = l.Admit(ctx)
	return release, err
}

// Admit is Acquire that also returns the instant at which every rule
// recorded the call: the admission instant a job log should show, exact
// however late the caller gets to read its own clock.
func (l *Limiter) Admit(ctx context.Context) (admitted time.Time, release func(), err error) {
	if err := l.slots.acquire(ctx, l.clock); err != nil {
		return time.Time{}, nil, err
	}
	at, err := l.wait(ctx)
	if err != nil {
		l.slots.release()
		return time.Time{}, nil, err
	}
	var once sync.Once
	return at, func() { once.Do(l.slots.release) }, nil
}

// Do acquires a slot and the rates, runs fn, and releases the slot when fn
// returns. It returns ctx's error if admission was cancelled, else fn's.
func (l *Limiter) Do(ctx context.Context, fn func(context.Context) error) error {
	release, err := l.Acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	return fn(ctx)
}

// AllowAt reports whether a call at instant t may go now, and if so
// records it. It never waits, and refuses while callers are queued so as
// not to overtake them.
func (l *Limiter) AllowAt(t time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.internalLocked(t)
	if len(l.queue) > 0 {
		return false
	}
	if d, _ := l.delayLocked(now); d > 0 {
		return false
	}
	l.admitLocked(now, now)
	return true
}

// Allow is AllowAt(now).
func (l *Limiter) Allow() bool { return l.AllowAt(l.clock.Now()) }

// DelayAt returns how long a caller arriving at t would wait for the rules
// if nobody were queued before it. It records nothing.
func (l *Limiter) DelayAt(t time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := max(int64(t.Sub(l.epoch))+l.offset, l.last)
	d, _ := l.delayLocked(now)
	return time.Duration(d)
}

// PauseUntil admits nothing before t, whatever the rules say: a server
// that answered 429 with Retry-After, or reported its quota spent, has the
// last word. reason says why, for diagnostics. A pause never shortens one
// already in force.
func (l *Limiter) PauseUntil(t time.Time, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.internalLocked(l.clock.Now())
	until := now + int64(t.Sub(l.toTime(now)))
	if until <= l.pause || until <= now {
		return
	}
	l.pause, l.reason = until, reason
	l.stats.pauses++
}

// Seed records calls made before this limiter existed, such as the
// admissions in a job log of an earlier run, so that a rule holds across
// restarts. Times may come in any order; those later than now are taken
// as now. Seed must be called before the first admission.
func (l *Limiter) Seed(times []time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started && len(times) > 0 {
		return errSeedLate
	}
	now := l.internalLocked(l.clock.Now())
	ts := make([]int64, 0, len(times))
	for _, t := range times {
		ts = append(ts, min(int64(t.Sub(l.epoch))+l.offset, now))
	}
	slices.Sort(ts)
	for i, w := range l.windows {
		lo := now - int64(l.rules[i].Window+l.margin)
		for _, t := range ts {
			if t > lo {
				w.record(t)
			}
		}
	}
	if len(ts) > 0 {
		l.started = true
	}
	return nil
}
