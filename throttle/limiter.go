package throttle

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/pace-cli/pace/throttle/internal/held"
	"github.com/pace-cli/pace/throttle/internal/link"
	"github.com/pace-cli/pace/throttle/internal/tally"
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
// Calls may weigh more than one: Admit takes a cost, which cost rules
// (Rule.Cost) count and count rules count as 1. Admission is FIFO: a
// caller is never overtaken by one that came later, so a costly call at
// the head waits until its whole cost fits and cheaper ones queue behind
// it. A caller whose context ends while it waits consumes nothing and
// delays nobody. Nothing spins: the head of the queue sleeps on one timer.
//
// Every admission goes through the same gate: Admit blocks, AllowN decides
// at an instant the caller brings without waiting, and both take an
// in-flight slot (of Options.MaxInFlight, when set) that the Admission's
// Release gives back; Do admits and releases around a function. DelayN
// only asks. The zero value is not usable: make a Limiter with New. It is
// safe for concurrent use, and it satisfies Backend.
type Limiter struct {
	// slots is changed without the lock by releases (and, without a cap,
	// by admissions): the padding keeps it off the cache lines that the
	// lock's holder works on.
	_     [64]byte
	slots slots
	_     [64]byte

	rules   []Rule
	reorder bool

	mu      lock
	epoch   time.Time // instant 0 of the internal timeline
	last    int64     // latest instant seen on the internal timeline
	margin  time.Duration
	windows []window
	queue   []*waiter     // FIFO; queue[0] is the only one allowed to sleep on the rules
	wake    chan struct{} // closed when room may have grown early (see kickLocked)
	pause   int64         // no admission before this instant
	reason  string        // why the current pause was set
	serial  uint64        // calls recorded so far, seeds included
	tally   *tally.Tally
	// sums is whether a counter keeps a cost rule: its admissions carry
	// the cost last recorded (Admission.last), which the counter's
	// correction needs; a log keeps each call's cost itself.
	sums    bool
	cells   atomic.Pointer[cellSlab] // where lastOf takes the cells from
	started bool                     // an admission or a Seed has happened
	closed  bool
	done    chan struct{} // closed by Close: wakes callers waiting for a slot
}

// waiter is a caller queued for admission.
type waiter struct {
	ready   chan struct{} // closed when the waiter becomes the head, or was admitted
	arrived int64
	cost    int
	// With reordering, the head admits a waiter behind it that fits:
	// then admitted is set, with the instant and serial, before ready is
	// closed.
	admitted bool
	at       int64
	serial   uint64
}

// Options configure a Limiter. The zero value of every field but Rules
// is the default.
type Options struct {
	// Rules are the rules kept, all at once. An empty set limits only the
	// calls in flight (if capped).
	Rules []Rule
	// MaxInFlight caps the calls in flight: Admit takes one of
	// MaxInFlight slots before it waits for the rates, and AllowN refuses
	// when none is free. 0 means no cap (admissions are still counted in
	// flight until released, in Stats.InFlight).
	MaxInFlight int
	// Margin widens every rule's window, so that a server whose clock or
	// counting differs a little from the limiter's still sees every rule
	// kept. The default is 0: the limiter alone is exact, and the margin
	// a caller needs depends on the jitter between admission and arrival
	// (see docs/design.md). SetMargin changes it later.
	Margin time.Duration
	// Reorder lets a call that fits now overtake calls queued before it
	// that do not: throughput before order. Without it admission is FIFO,
	// and a costly call at the head of the queue holds back cheaper ones
	// behind it until its whole cost fits. With it a steady stream of
	// cheap calls can hold a costly one back indefinitely.
	Reorder bool
	// CounterAbove keeps every rule with N > CounterAbove in a
	// bounded-memory sliding window counter (at most 1,026 small buckets,
	// never more than N in any window, up to 0.1% less throughput)
	// instead of an exact log of up to N entries. 0 means 100,000;
	// negative, counters for every rule. A counter of a cost rule keeps
	// only sums, so a correction (Admission.Correct) must say the cost it
	// replaces: each admission under it carries one small cell, shared
	// with its copies, holding the cost last recorded. The limiter keeps
	// nothing per call: memory does not grow with the calls corrected.
	CounterAbove int
}

// New returns a limiter keeping opts.Rules. It returns a *RuleError for a
// rule that is not Valid.
func New(opts Options) (*Limiter, error) {
	if err := validate(opts.Rules); err != nil {
		return nil, err
	}
	counterAbove := opts.CounterAbove
	switch {
	case counterAbove == 0:
		counterAbove = link.CounterAbove
	case counterAbove < 0:
		counterAbove = 0
	}
	margin := link.ClampMargin(opts.Margin)
	l := &Limiter{
		rules:   slices.Clone(opts.Rules),
		margin:  margin,
		slots:   slots{max: max(opts.MaxInFlight, 0)},
		reorder: opts.Reorder,
		epoch:   time.Now(),
		wake:    make(chan struct{}),
		done:    make(chan struct{}),
		mu:      newLock(),
		tally:   tally.New(len(opts.Rules)),
	}
	for _, r := range opts.Rules {
		w := int64(r.Window + margin)
		if r.N > counterAbove {
			l.windows = append(l.windows, newSlidingCounter(r.N, w, counterBuckets))
			l.sums = l.sums || r.Cost
		} else {
			l.windows = append(l.windows, newSlidingLog(r.N, w))
		}
	}
	return l, nil
}

// SetMargin makes d the margin added to every window from now on. A
// narrower margin frees room at once; calls already forgotten under a
// narrower one are not remembered again by a wider one. A negative d is
// treated as 0, and one longer than the longest window a rule may have (a
// century) as that.
func (l *Limiter) SetMargin(d time.Duration) {
	d = link.ClampMargin(d)
	l.mu.Lock()
	defer l.mu.Unlock()
	if d == l.margin {
		return
	}
	narrower := d < l.margin
	l.margin = d
	for i, w := range l.windows {
		w.setWidth(int64(l.rules[i].Window + d))
	}
	if narrower {
		l.kickLocked()
	}
}

// nowLocked maps t onto the internal timeline. An instant earlier than one
// already seen is taken as that one, for this call only: the timeline
// never runs backwards, and a caller bringing an old instant neither
// admits early nor moves the timeline for later callers. Requires l.mu
// held.
func (l *Limiter) nowLocked(t time.Time) int64 {
	l.last = max(int64(t.Sub(l.epoch)), l.last)
	return l.last
}

// clockLocked is nowLocked(time.Now()) at half the cost: the epoch has a
// monotonic reading, so time.Since reads only the monotonic clock, where
// time.Now reads the wall clock too. It is read with the lock held, on
// the admission path, where every nanosecond holds up contending callers.
func (l *Limiter) clockLocked() int64 {
	l.last = max(int64(time.Since(l.epoch)), l.last)
	return l.last
}

// toTime maps an internal instant back to wall time. The epoch never
// changes after New, so it needs no lock: admissions map their instant
// after unlocking (time.Time.Add is not free, and every nanosecond under
// the lock holds up contending callers).
func (l *Limiter) toTime(ns int64) time.Time { return l.epoch.Add(time.Duration(ns)) }

// delayLocked returns how long a call of the given cost at now must wait
// and why: the index of the rule with the longest wait, or bindPause.
// Requires l.mu held.
func (l *Limiter) delayLocked(now int64, cost int) (int64, int) {
	var d int64
	why := tally.None
	if p := l.pause - now; p > 0 {
		d, why = p, tally.Pause
	}
	for i, w := range l.windows {
		if wd := w.delay(now, l.rules[i].weight(cost)); wd > d {
			d, why = wd, i
		}
	}
	return d, why
}

// admitLocked records a call of the given cost at now in every rule and
// returns its serial. Requires l.mu held and delayLocked(now, cost) == 0.
func (l *Limiter) admitLocked(now, arrived int64, cost int) uint64 {
	l.started = true
	l.serial++
	for i, w := range l.windows {
		l.tally.Observe(i, w.record(now, l.rules[i].weight(cost), l.serial))
	}
	l.tally.Admit(time.Duration(now - arrived))
	return l.serial
}

// admitNowLocked records a call of the given cost at now, and returns
// its serial, if every rule has room for it at once and no pause holds;
// otherwise it records nothing and reports false. It is delayLocked(now,
// cost) == 0 followed by admitLocked, asking the common windows without
// interface calls (room, which their delay uses too): the common case, held under the lock that every contending caller
// queues for. Requires l.mu held.
func (l *Limiter) admitNowLocked(now int64, cost int) (uint64, bool) {
	if l.pause > now {
		return 0, false
	}
	for i, w := range l.windows {
		c := l.rules[i].weight(cost)
		var fits bool
		switch w := w.(type) {
		case *slidingLog:
			w.advance(now)
			fits = w.room(c)
		case *slidingCounter:
			w.evict(now)
			fits = w.room(c)
		default:
			fits = w.delay(now, c) == 0
		}
		if !fits {
			return 0, false
		}
	}
	return l.admitLocked(now, now, cost), true
}

// kickLocked wakes the head of the queue, which may now fit earlier than
// it planned. Only the head sleeps on l.wake, and it stays in the queue
// while it sleeps: with no queue there is no one to wake, and no new
// channel to make (a correction, on every call under
// --cost-from-response, would allocate one). Requires l.mu held.
func (l *Limiter) kickLocked() {
	if len(l.queue) == 0 {
		return
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

// wait waits until every rule admits a call of the given cost and
// records it; it returns the instant the call was recorded, its serial
// and how long it waited. The cost must fit (checkCost). The instant is
// read with the lock held, so that the time a caller spends getting the
// lock is not counted before its call (it would be lag: the call leaves
// later than its instant says).
func (l *Limiter) wait(ctx context.Context, cost int) (time.Time, uint64, time.Duration, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return time.Time{}, 0, 0, ErrClosed
	}
	now := l.clockLocked()
	if len(l.queue) == 0 || l.reorder {
		if d, _ := l.delayLocked(now, cost); d == 0 {
			s := l.admitLocked(now, now, cost)
			l.mu.Unlock()
			return l.toTime(now), s, 0, nil
		}
	}
	w := &waiter{ready: make(chan struct{}), arrived: now, cost: cost}
	l.queue = append(l.queue, w)
	head := len(l.queue) == 1
	if !head && l.reorder {
		l.kickLocked() // the head plans its wake-up for whoever fits first
	}
	l.mu.Unlock()

	if !head {
		select {
		case <-w.ready:
		case <-ctx.Done():
			l.mu.Lock()
			l.leaveLocked(w)
			admitted := w.admitted
			if !admitted {
				l.tally.GaveUp(time.Duration(l.clockLocked() - w.arrived))
			}
			l.mu.Unlock()
			if !admitted {
				return time.Time{}, 0, 0, ctx.Err()
			}
		}
		l.mu.Lock()
		admitted, at, serial := w.admitted, w.at, w.serial
		l.mu.Unlock()
		if admitted {
			return l.toTime(at), serial, time.Duration(at - w.arrived), nil
		}
	}
	return l.waitAsHead(ctx, w, cost)
}

// admitBehindLocked admits, in queue order, the waiters behind the head
// whose cost fits at now (Options.Reorder). Requires l.mu held.
func (l *Limiter) admitBehindLocked(now int64) {
	for i := 1; i < len(l.queue); {
		w := l.queue[i]
		if d, _ := l.delayLocked(now, w.cost); d > 0 {
			i++
			continue
		}
		w.serial = l.admitLocked(now, w.arrived, w.cost)
		w.at, w.admitted = now, true
		l.queue = slices.Delete(l.queue, i, i+1)
		close(w.ready)
	}
}

// waitAsHead sleeps on the rules until they admit w, the head of the
// queue, and returns the instant the call was recorded, its serial and
// how long it waited.
func (l *Limiter) waitAsHead(ctx context.Context, w *waiter, cost int) (time.Time, uint64, time.Duration, error) {
	for {
		l.mu.Lock()
		if l.closed {
			l.leaveLocked(w)
			l.mu.Unlock()
			return time.Time{}, 0, 0, ErrClosed
		}
		now := l.clockLocked()
		d, why := l.delayLocked(now, cost)
		if d == 0 {
			s := l.admitLocked(now, w.arrived, cost)
			l.leaveLocked(w)
			l.mu.Unlock()
			return l.toTime(now), s, time.Duration(now - w.arrived), nil
		}
		if why == tally.Pause {
			l.tally.BlockedOnPause()
		} else {
			l.tally.BlockedOnRule(why)
		}
		if l.reorder && why != tally.Pause {
			// Admit what fits behind, and wake for the earliest of them.
			l.admitBehindLocked(now)
			for _, b := range l.queue[1:] {
				if bd, _ := l.delayLocked(now, b.cost); bd > 0 && bd < d {
					d = bd
				}
			}
		}
		wake := l.wake
		l.mu.Unlock()

		t := time.NewTimer(time.Duration(d))
		select {
		case <-t.C:
		case <-wake:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			l.mu.Lock()
			l.leaveLocked(w)
			l.tally.GaveUp(time.Duration(l.clockLocked() - w.arrived))
			l.mu.Unlock()
			return time.Time{}, 0, 0, ctx.Err()
		}
	}
}

// leaveLocked removes w from the queue and, if w was the head, wakes the
// next waiter. Requires l.mu held.
func (l *Limiter) leaveLocked(w *waiter) {
	i := slices.Index(l.queue, w)
	if i < 0 {
		return
	}
	l.queue = slices.Delete(l.queue, i, i+1)
	if i == 0 && len(l.queue) > 0 {
		close(l.queue[0].ready)
	}
}

// Admit takes an in-flight slot (waiting FIFO for one if
// Options.MaxInFlight is reached), then waits until every rule admits a
// call of the given cost, and records it. The Admission says when (exact,
// however late the caller gets to read its own clock); its Release gives
// the slot back once the call has ended, and its Correct records the
// true cost. If ctx ends first, Admit returns ctx's error and holds
// nothing. A cost below 1 or above the N of a cost rule fails at once,
// with an error wrapping ErrBadCost: such a call could never be admitted.
func (l *Limiter) Admit(ctx context.Context, cost int) (Admission, error) {
	if err := checkCost(l.rules, cost); err != nil {
		return Admission{}, err
	}
	if err := ctx.Err(); err != nil {
		return Admission{}, err
	}
	var (
		slotWait time.Duration
		h        uint64
		ok       bool
	)
	if l.slots.max > 0 && held.Slot(ctx) {
		// The caller holds a slot for this call: no other is taken, and
		// its Release gives back nothing.
		at, serial, waited, err := l.wait(ctx, cost)
		if err != nil {
			return Admission{}, err
		}
		return Admission{At: at, Cost: cost, Waited: waited, Latency: time.Since(at), owner: (*owner)(l), handle: noSlot, id: serial, local: at, last: l.lastOf(cost)}, nil
	}
	if l.slots.max <= 0 {
		// No cap: the slot is only counted, without the lock.
		h, ok = l.slots.take(), true
		l.mu.Lock()
	} else {
		l.mu.Lock()
		h, ok = l.slots.takeLocked()
	}
	if ok {
		// The common case: a slot, and room in every rule, at once.
		if !l.closed && (len(l.queue) == 0 || l.reorder) {
			now := l.clockLocked()
			if serial, ok := l.admitNowLocked(now, cost); ok {
				l.mu.Unlock()
				at := l.toTime(now)
				// Admitted on the caller's goroutine, which returns at
				// once: Latency 0 (reading the clock again here cost 50ns
				// a call under contention, BenchmarkAdmitContended).
				return Admission{At: at, Cost: cost, owner: (*owner)(l), handle: h, id: serial, local: at, last: l.lastOf(cost)}, nil
			}
		}
		l.mu.Unlock()
	} else {
		if l.closed {
			l.mu.Unlock()
			return Admission{}, ErrClosed
		}
		var err error
		if h, slotWait, err = l.slots.acquireSlow(ctx, l.done, &l.mu); err != nil {
			return Admission{}, err
		}
	}
	at, serial, waited, err := l.wait(ctx, cost)
	if err != nil {
		l.slots.release(h, &l.mu)
		return Admission{}, err
	}
	// A waiter admitted by another goroutine runs when the scheduler
	// lets it: Latency counts that too.
	return Admission{At: at, Cost: cost, Waited: slotWait + waited, Latency: time.Since(at), owner: (*owner)(l), handle: h, id: serial, local: at, last: l.lastOf(cost)}, nil
}

// owner is a Limiter as the owner of its admissions.
type owner Limiter

// Release gives back the in-flight slot of the admission h.
func (o *owner) Release(h uint64) { o.slots.release(h, &o.mu) }

// Correct changes the cost recorded for the call serial, admitted at at,
// in every cost rule still holding it, to to. A log keeps each call's
// cost and needs no from; a counter adds to-from, and from is then the
// cost last recorded for the call, which the admission and its copies
// share (Limiter.sums), so that every rule counts to whichever copy
// corrects.
func (o *owner) Correct(_ context.Context, serial uint64, at time.Time, from, to int) error {
	l := (*Limiter)(o)
	l.mu.Lock()
	defer l.mu.Unlock()
	ns := int64(at.Sub(l.epoch))
	now := l.clockLocked()
	for i, w := range l.windows {
		if l.rules[i].Cost {
			w.adjust(serial, ns, from, to)
			l.tally.Observe(i, w.used(now))
		}
	}
	// A lower cost frees room early; a log's cost lowered from more than
	// a stale from says too, so the head is woken whatever from was.
	l.kickLocked()
	return nil
}

// lastOf returns the cell an admission of a call of the given cost
// carries: the cost last recorded, for a counter of a cost rule, or nil
// where no counter keeps one.
func (l *Limiter) lastOf(cost int) *recorded {
	if !l.sums {
		return nil
	}
	for {
		s := l.cells.Load()
		if s != nil {
			if i := s.next.Add(1) - 1; i < int64(len(s.cells)) {
				r := &s.cells[i]
				r.cost.Store(int64(cost))
				return r
			}
		}
		n := new(cellSlab)
		n.next.Store(1)
		if l.cells.CompareAndSwap(s, n) {
			n.cells[0].cost.Store(int64(cost))
			return &n.cells[0]
		}
	}
}

// cellSlab holds the cells of a limiter's admissions (Admission.last),
// handed out in turn: one allocation for every len(cells) admissions
// rather than one each (the weighted admission's benchmark allocated
// nothing before the cells were shared with copies). A slab stays in
// memory, about half a kilobyte, while any of its cells is held.
type cellSlab struct {
	next  atomic.Int64
	cells [64]recorded
}

// AllowN admits a call of the given cost at instant t if it may go now,
// without waiting: a free in-flight slot and room in every rule. It
// reports false, holding nothing, otherwise, and while callers are queued
// so as not to overtake them. Release the Admission as Admit's. An
// instant t earlier than one the limiter has already seen is taken as
// that one. Its instants and Admit's clock are one timeline: an instant
// ahead of the clock moves the timeline there for every caller, so that
// Admit then records its calls at that instant and waits for room there.
// Use one or the other: instants of the caller's own (a simulation, a
// test), or Admit's clock.
func (l *Limiter) AllowN(t time.Time, cost int) (Admission, bool) {
	if checkCost(l.rules, cost) != nil {
		return Admission{}, false
	}
	l.mu.Lock()
	if l.closed || len(l.queue) > 0 {
		l.mu.Unlock()
		return Admission{}, false
	}
	now := l.nowLocked(t)
	if d, _ := l.delayLocked(now, cost); d > 0 {
		l.mu.Unlock()
		return Admission{}, false
	}
	h, ok := l.slots.takeLocked()
	if !ok {
		l.mu.Unlock()
		return Admission{}, false
	}
	serial := l.admitLocked(now, now, cost)
	l.mu.Unlock()
	return Admission{At: l.toTime(now), Cost: cost, owner: (*owner)(l), handle: h, id: serial, last: l.lastOf(cost)}, true
}

// DelayN returns how long a call of the given cost arriving at t would
// wait for the rules if nobody were queued before it. It records nothing.
// A cost that can never fit returns the largest Duration.
func (l *Limiter) DelayN(t time.Time, cost int) time.Duration {
	if checkCost(l.rules, cost) != nil {
		return time.Duration(1<<63 - 1)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := max(int64(t.Sub(l.epoch)), l.last)
	d, _ := l.delayLocked(now, cost)
	return time.Duration(d)
}

// PauseUntil admits nothing before t, whatever the rules say: a server
// that answered 429 with Retry-After, or reported its quota spent, has the
// last word. reason says why, for diagnostics. A pause never shortens one
// already in force.
func (l *Limiter) PauseUntil(t time.Time, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clockLocked()
	until := int64(t.Sub(l.epoch))
	if until <= l.pause || until <= now {
		return
	}
	l.pause, l.reason = until, reason
	l.tally.Paused()
}

// Seed records calls made before this limiter existed, such as the
// admissions in a job log of an earlier run, so that a rule holds across
// restarts. Calls may come in any order; those later than now are taken
// as now, a cost below 1 as 1, and one above MaxLimit as MaxLimit (it
// fills any rule). Seed must be called before the first admission.
func (l *Limiter) Seed(calls []Call) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(calls) == 0 {
		return nil
	}
	if l.started {
		return errSeedLate
	}
	now := l.clockLocked()
	type seed struct {
		t    int64
		cost int
	}
	ss := make([]seed, 0, len(calls))
	for _, c := range calls {
		ss = append(ss, seed{min(int64(c.At.Sub(l.epoch)), now), min(max(c.Cost, 1), MaxLimit)})
	}
	slices.SortStableFunc(ss, func(a, b seed) int { return cmp.Compare(a.t, b.t) })
	for _, s := range ss {
		l.serial++
		for i, w := range l.windows {
			if s.t > now-int64(l.rules[i].Window+l.margin) {
				w.record(s.t, l.rules[i].weight(s.cost), l.serial)
			}
		}
	}
	l.started = true
	return nil
}

// Close makes waiting and later admissions fail with ErrClosed. Slots
// already held may still be released. It returns nil.
func (l *Limiter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		l.kickLocked()
		close(l.done)
	}
	return nil
}

var errSeedLate = fmt.Errorf("throttle: Seed called after the first admission")
