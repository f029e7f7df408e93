package gate

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/backend"
	"github.com/pace-cli/pace/throttle/internal/fifo"
	"github.com/pace-cli/pace/throttle/internal/held"
	"github.com/pace-cli/pace/throttle/internal/link"
	"github.com/pace-cli/pace/throttle/internal/tally"
)

// newAdmission is backend.NewAdmission with the choice of the cell that
// holds the cost last recorded: only an admission under a cost rule needs
// it (Core.costs), and only that one allocates.
var newAdmission = link.NewAdmission.(func(link.Owner, uint64, uint64, time.Time, int, time.Duration, time.Duration, bool) throttle.Admission)

// MaxBatch is the most calls one admission attempt asks the store for.
const MaxBatch = 64

// Store is what a shared backend brings to its Core: the store's
// decisions and its slots. Everything between decisions (the FIFO queue,
// the wait loop, pauses, margins, the tally, calls in flight) is the
// Core's. Its methods are called by one caller at a time per kind: Admit
// by the Core's admitter, TrySlot under the slot turn.
type Store interface {
	// Admit runs one admission attempt for calls of the given costs (at
	// least one, at most MaxBatch), in order, with every window widened
	// by the wider of margin (this process's) and the margins of the
	// other processes sharing the quota. It admits the longest prefix of
	// them that the rules allow at one instant of the store, checking
	// each call against the rules with the calls before it in the batch
	// counted, and records each admitted call: a burst, legal because the
	// rules count calls in half-open windows. It stops at the first call
	// refused, and records nothing for it or the calls after it. A store
	// may admit fewer than fit (at least the first, if it fits): one that
	// asks in one step per call loses nothing by taking one at a time.
	Admit(ctx context.Context, costs []int, margin time.Duration) (Decision, error)
	// Correct changes the cost recorded for the call id, admitted at at,
	// from one cost to another, and returns each rule's use in the given
	// order after it (-1 where the store did not say); or ctx's error if
	// ctx ends first.
	Correct(ctx context.Context, id uint64, at time.Time, from, to int, margin time.Duration) ([]int, error)
	// Publish records margin in the store at once and returns the widest
	// margin in force among the processes sharing the quota.
	Publish(ctx context.Context, margin time.Duration) (time.Duration, error)
	// TrySlot tries once to take a slot of the cap on calls in flight for
	// the caller attempt (the same for every try of one caller, so that a
	// try whose answer was lost is not a second slot). If none is free it
	// returns ok false and how long to wait before trying again.
	TrySlot(ctx context.Context, attempt uint64) (slot any, ok bool, retry time.Duration, err error)
	// ReleaseSlot gives back a slot TrySlot took. It waits for the store
	// at most until ctx is done (a caller who gave up does not wait on a
	// store that stopped answering); the release goes on without it.
	ReleaseSlot(ctx context.Context, slot any)
}

// Decision is the outcome of one admission attempt.
type Decision struct {
	Admitted int           // how many of the calls asked were admitted: the first Admitted
	At       time.Time     // the store's instant
	ID       uint64        // the first call's id in the store; the k-th admitted has ID+k
	Wait     time.Duration // how long before the first call refused could fit
	Rule     int           // if one was refused: the rule (given order) needing the longest wait
	Used     []int         // per rule, given order: the weight in the window, admitted calls counted
	Fleet    time.Duration // the widest margin in force, which the decision applied
	// Latency is how long before Decided the store recorded the call
	// (for a remote store, the reply's way back); Decided is when the
	// store's answer was in hand, if set: the admission's latency adds
	// the time from then until Admit returns (the hand-over to the
	// caller), which a margin must cover as well.
	Latency time.Duration
	Decided time.Time
}

// Config configures a Core.
type Config struct {
	Name       string          // the backend's package, for errors: "redisrate", "localstore"
	Rules      []throttle.Rule // in the order given
	GlobalJobs int             // the cap on calls in flight across processes; 0 none
	Margin     time.Duration   // this process's margin at first
	Jitter     time.Duration   // most random delay added to a wait (5% of it at most)
	Timeout    time.Duration   // how long a publication of the margin may take
}

// Core is what both shared backends do alike around their store's
// decisions: it queues the callers waiting for the rates (FIFO within
// the process) and one admitter asks the store for the calls at the head
// of the queue, as many as fit, in one attempt; it sleeps what the store
// says plus jitter, sleeps out a server's pause, widens windows by the
// margin and publishes a wider one, counts admissions and what they
// waited on, keeps the calls in flight and the slots they hold, and hands
// out admissions. It is safe for concurrent use.
type Core struct {
	cf    Config
	store Store
	costs bool // a rule counts costs: admissions carry the cost last recorded (link.NewAdmission)

	slotTurn fifo.Lock // one caller at a time waits for a slot

	closed     chan struct{}
	closeOnce  sync.Once
	publishers sync.WaitGroup
	admitters  sync.WaitGroup // the admitter, while it runs
	wake       chan struct{}  // (buffered) ends the admitter's sleep: the head of the queue left
	seq        atomic.Uint64  // ids of admissions without rules
	slotSeq    atomic.Uint64  // ids of the callers waiting for slots

	mu           sync.Mutex
	margin       time.Duration
	fleet        time.Duration // the widest margin in force, at the last decision
	publishing   bool
	tally        *tally.Tally
	used         []int         // per rule in given order: weight in the window at the last decision
	sleeps       int64         // times the admitter slept (on a rule or a pause)
	trip         time.Duration // the quickest the store answered an admission attempt; -1 before one
	pause        Pause
	queue        []*waiter          // callers waiting for the rates, in arrival order
	admitting    bool               // the admitter runs
	cancelAsk    context.CancelFunc // ends the attempt under way; nil if none
	askers       int                // callers of the attempt under way who have not left
	handed       time.Time          // when the admitter last admitted a call
	handedSleeps int64              // sleeps then
	held         map[uint64]any     // admission id -> the slot it holds (nil for none)
	inFlight     int
	peak         int
	slotWaits    int64
	slotWait     time.Duration
}

// NewCore returns the core of a backend keeping cf.Rules in store.
func NewCore(cf Config, store Store) *Core {
	cf.Margin = max(cf.Margin, 0)
	return &Core{
		cf:     cf,
		store:  store,
		closed: make(chan struct{}),
		wake:   make(chan struct{}, 1),
		margin: link.ClampMargin(cf.Margin),
		tally:  tally.New(len(cf.Rules)),
		used:   make([]int, len(cf.Rules)),
		held:   make(map[uint64]any),
		costs:  slices.ContainsFunc(cf.Rules, func(r throttle.Rule) bool { return r.Cost }),
		trip:   -1,
	}
}

// Closed is closed when the backend closes.
func (c *Core) Closed() <-chan struct{} { return c.closed }

// IsClosed reports whether Shutdown was called.
func (c *Core) IsClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// Margin returns this process's margin now.
func (c *Core) Margin() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.margin
}

// CheckCost returns why a call of the given cost can never be admitted.
func (c *Core) CheckCost(cost int) error {
	if cost < 1 {
		return fmt.Errorf("%s: cost %d: %w", c.cf.Name, cost, throttle.ErrBadCost)
	}
	if m := throttle.MaxCost(c.cf.Rules); m > 0 && cost > m {
		return fmt.Errorf("%s: cost %d exceeds the smallest cost rule (%d): %w", c.cf.Name, cost, m, throttle.ErrBadCost)
	}
	return nil
}

// Admit takes a slot (when GlobalJobs set a cap, waiting FIFO within
// this process for one), then waits until the store admits a call of the
// given cost, and returns its admission. If it fails it holds nothing: a
// slot taken before the rate wait failed is given back.
func (c *Core) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	if err := c.CheckCost(cost); err != nil {
		return throttle.Admission{}, err
	}
	start := time.Now()
	var slot any
	riding := held.Slot(ctx) // in flight on the caller's slot: not counted again
	if c.cf.GlobalJobs > 0 && !riding {
		var err error
		if slot, err = c.takeSlot(ctx); err != nil {
			return throttle.Admission{}, err
		}
	}
	d, err := c.wait(ctx, cost)
	if err != nil {
		if slot != nil {
			c.store.ReleaseSlot(ctx, slot)
		}
		return throttle.Admission{}, err
	}
	if !riding {
		c.mu.Lock()
		c.inFlight++
		c.peak = max(c.peak, c.inFlight)
		c.held[d.ID] = slot // nil without a slot: the admission is in flight all the same
		c.mu.Unlock()
	}
	latency := d.Latency
	if !d.Decided.IsZero() {
		latency += time.Since(d.Decided)
	}
	return newAdmission((*owner)(c), d.ID, d.ID, d.At, cost, time.Since(start), latency, c.costs), nil
}

// waiter is a caller waiting in the admission queue. Its fields after
// done are guarded by the Core's mu.
type waiter struct {
	ctx     context.Context
	cost    int
	arrived time.Time
	sleeps  int64         // the Core's sleeps when it came
	done    chan struct{} // closed once d or err is set
	d       Decision      // its own decision, if admitted
	err     error
	asked   bool // its call is in the attempt under way
	gone    bool // its caller left before a decision
}

// waitedLocked returns how long w's wait counts for, admitted now: from
// when it came or, if later, from when the caller before it was admitted,
// and only if the admitter slept while w was first in line (0 otherwise).
// Callers admitted together are one wait, and a pool that keeps its
// callers queued here counts as one that asks once the admission before
// has come. Requires c.mu held.
func (c *Core) waitedLocked(w *waiter) time.Duration {
	since, slept := w.arrived, w.sleeps
	if c.handed.After(since) {
		since, slept = c.handed, c.handedSleeps
	}
	if c.sleeps == slept {
		return 0
	}
	return max(time.Since(since), 1)
}

// wait waits until the store admits a call of the given cost and returns
// the decision that did. The caller joins the queue and the admitter
// decides for it; once it holds its place it tells a caller that keeps
// several admissions waiting in order (backend.WithQueued).
func (c *Core) wait(ctx context.Context, cost int) (Decision, error) {
	if err := Usable(ctx, c.closed); err != nil {
		return Decision{}, err
	}
	if len(c.cf.Rules) == 0 {
		c.mu.Lock()
		c.tally.Admit(0)
		c.mu.Unlock()
		return Decision{Admitted: 1, At: time.Now(), ID: c.seq.Add(1)}, nil
	}
	w := &waiter{ctx: ctx, cost: cost, arrived: time.Now(), done: make(chan struct{})}
	c.mu.Lock()
	if c.IsClosed() {
		c.mu.Unlock()
		return Decision{}, throttle.ErrClosed
	}
	w.sleeps = c.sleeps
	c.queue = append(c.queue, w)
	start := !c.admitting
	if start {
		c.admitting = true
		c.admitters.Add(1)
	}
	c.mu.Unlock()
	if start {
		go c.admit()
	}
	backend.Queued(ctx)
	var err error
	select {
	case <-w.done:
		return w.d, w.err
	case <-ctx.Done():
		err = ctx.Err()
	case <-c.closed:
		err = throttle.ErrClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-w.done:
		// Decided as it left: an admission recorded goes ahead, as one
		// whose answer came back just before the end always did.
		return w.d, w.err
	default:
	}
	w.gone = true
	// A wait given up counts as it would have, admitted now.
	c.tally.GaveUp(c.waitedLocked(w))
	if w.asked {
		// The attempt under way carries its call; the admitter drops it
		// when the answer comes (admitted: spent quota, on the safe
		// side). If nobody of the attempt is left, it ends at once.
		c.askers--
		if c.askers == 0 && c.cancelAsk != nil {
			c.cancelAsk()
		}
		return Decision{}, err
	}
	i := slices.Index(c.queue, w)
	c.queue = slices.Delete(c.queue, i, i+1)
	if i == 0 {
		// The admitter may be sleeping on this caller's wait: the next
		// asks at once (and an empty queue lets the admitter go).
		c.poke()
	}
	return Decision{}, err
}

// poke ends the admitter's sleep. Requires mu held.
func (c *Core) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// nap sleeps d, or until poked or the core closes.
func (c *Core) nap(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.wake:
	case <-c.closed:
	}
}

// admit is the admitter: while callers queue, it asks the store to admit
// the calls at the head of the queue, up to MaxBatch, in one attempt, at
// one instant; hands each admitted caller its own decision; and sleeps
// what the store says the first refused call must wait (a round trip
// early, see below) before it asks again. The queue keeps its order: the
// first call refused and those behind it stay at the head.
func (c *Core) admit() {
	defer c.admitters.Done()
	for {
		c.mu.Lock()
		if len(c.queue) == 0 || c.IsClosed() {
			c.admitting = false
			c.mu.Unlock()
			return
		}
		if d := time.Until(c.pause.Until); d > 0 {
			c.sleeps++
			c.tally.BlockedOnPause()
			c.mu.Unlock()
			c.nap(d)
			continue
		}
		batch := slices.Clone(c.queue[:min(len(c.queue), MaxBatch)])
		costs := make([]int, len(batch))
		for i, w := range batch {
			w.asked = true
			costs[i] = w.cost
		}
		// The attempt carries the head's context values, and ends only
		// when every caller in it has left or the core closes.
		ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
		c.cancelAsk, c.askers = cancel, len(batch)
		margin := c.margin
		c.mu.Unlock()

		asked := time.Now()
		d, err := c.store.Admit(ctx, costs, margin)
		took := time.Since(asked)
		cancel()

		c.mu.Lock()
		c.cancelAsk = nil
		n := 0 // the calls decided: admitted, or failed with err
		if err != nil {
			if c.IsClosed() {
				err = throttle.ErrClosed
			}
			for _, w := range batch {
				if !w.gone {
					w.err = err
					close(w.done)
				}
			}
			n = len(batch)
		} else {
			if c.trip < 0 || took < c.trip {
				c.trip = took
			}
			copy(c.used, d.Used)
			c.fleet = d.Fleet
			n = min(max(d.Admitted, 0), len(batch))
			if n > 0 {
				for i, u := range c.used {
					c.tally.Observe(i, u)
				}
			}
			for i, w := range batch[:n] {
				waited := c.waitedLocked(w)
				c.handed, c.handedSleeps = time.Now(), c.sleeps
				if w.gone {
					continue // recorded, its caller gone: spent quota, on the safe side
				}
				c.tally.Admit(waited)
				w.d = d
				w.d.Admitted = 1
				w.d.ID = d.ID + uint64(i)
				close(w.done)
			}
		}
		// The rest of the batch stays at the head, in order; those who
		// left while it was asked go now.
		rest := make([]*waiter, 0, len(c.queue)-n)
		for _, w := range c.queue[n:] {
			w.asked = false
			if !w.gone {
				rest = append(rest, w)
			}
		}
		c.queue = rest
		if n == len(batch) || batch[n].gone {
			// All decided, or the call refused left: ask again at once
			// for the callers still queued.
			c.mu.Unlock()
			continue
		}
		c.sleeps++
		c.tally.BlockedOnRule(d.Rule)
		// The store's wait runs from its decision; the answer took a
		// while to come back and the next attempt takes a while to get
		// there. Asking again the quickest round trip early gets there
		// about when the call fits, not a round trip after (over a slow
		// link, a round trip lost at every wait). The store decides on
		// its own clock: an attempt that comes early is told to wait the
		// rest, and nothing is recorded early.
		sleep := max(d.Wait-c.trip, 0)
		c.mu.Unlock()
		c.nap(sleep + Jitter(sleep, c.cf.Jitter))
	}
}

// takeSlot takes one of the slots, waiting FIFO behind this process's
// earlier callers. A caller that finds every slot taken tries again when
// the store says (plus jitter of up to a quarter of that, so that
// processes polling together drift apart); only it counts as having
// waited.
func (c *Core) takeSlot(ctx context.Context) (any, error) {
	if err := Usable(ctx, c.closed); err != nil {
		return nil, err
	}
	arrived := time.Now()
	if err := c.slotTurn.Lock(ctx, c.closed); err != nil {
		return nil, err
	}
	defer c.slotTurn.Unlock()
	attempt := c.slotSeq.Add(1)
	waited := false
	for {
		slot, ok, retry, err := c.store.TrySlot(ctx, attempt)
		if err != nil {
			return nil, err
		}
		if ok {
			c.mu.Lock()
			if c.IsClosed() {
				c.mu.Unlock()
				c.store.ReleaseSlot(ctx, slot)
				return nil, throttle.ErrClosed
			}
			if waited {
				c.slotWaits++
				c.slotWait += time.Since(arrived)
			}
			c.mu.Unlock()
			return slot, nil
		}
		waited = true
		if err := Sleep(ctx, c.closed, retry+Jitter(5*retry, c.cf.Jitter)); err != nil {
			// The slot may have been taken by an answer that never
			// arrived; the store frees it on its own (a lease, a lock).
			return nil, err
		}
	}
}

// owner is a Core as the owner of its admissions.
type owner Core

// Slot returns the slot that a, one of this Core's admissions, holds; nil
// if it holds none, was released, or is not this Core's.
func (c *Core) Slot(a throttle.Admission) any {
	o, h := backend.HandleOf(a)
	if own, ok := o.(*owner); !ok || (*Core)(own) != c {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[h]
}

// Release gives back the slot of the admission id, if it holds one. An
// id already released is ignored.
func (o *owner) Release(id uint64) {
	c := (*Core)(o)
	c.mu.Lock()
	slot, ok := c.held[id]
	if ok {
		c.inFlight--
		delete(c.held, id)
	}
	c.mu.Unlock()
	if slot != nil {
		c.store.ReleaseSlot(context.Background(), slot)
	}
}

// Correct changes the cost recorded for the admission id in the cost
// rules still holding it, from from to to. With a cost rule the
// admission carries the cost last recorded, whichever copy of it
// corrected, and from is that: Redis changes a cost only where it finds
// from (so that a try of an earlier correction left behind changes
// nothing), and the local store's counters add to-from.
func (o *owner) Correct(ctx context.Context, id uint64, at time.Time, from, to int) error {
	c := (*Core)(o)
	if from == to {
		return nil
	}
	used, err := c.store.Correct(ctx, id, at, from, to, c.Margin())
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, u := range used {
		if u >= 0 {
			c.used[i] = u
			c.tally.Observe(i, u)
		}
	}
	return nil
}

// PauseUntil makes this process admit nothing before t, whatever the
// store says. The pause is local; other processes sharing the quota are
// not told. A pause never shortens one already in force.
func (c *Core) PauseUntil(t time.Time, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pause.Extend(t, reason) {
		c.tally.Paused()
	}
}

// SetMargin makes d this process's margin from the next decision on. A
// margin wider than the fleet's is also published at once, in the
// background, so that the other processes widen their windows before
// this one next admits a call. A negative d is treated as 0, and one
// wider than a century (link.MaxWindow) as that: window arithmetic must not
// overflow.
func (c *Core) SetMargin(d time.Duration) {
	d = link.ClampMargin(d)
	c.mu.Lock()
	wider := d > c.margin && d > c.fleet
	c.margin = d
	start := wider && !c.publishing && !c.IsClosed() && len(c.cf.Rules) > 0
	if start {
		c.publishing = true
		c.publishers.Add(1)
	}
	c.mu.Unlock()
	if start {
		go c.publish()
	}
}

// publish records this process's margin in the store until what it
// recorded is the latest; a failure is left to the next admission, which
// records the margin too.
func (c *Core) publish() {
	defer c.publishers.Done()
	ctx, cancel := context.WithTimeout(context.Background(), c.cf.Timeout)
	defer cancel()
	go func() {
		select {
		case <-c.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		own := c.Margin()
		fleet, err := c.store.Publish(ctx, own)
		c.mu.Lock()
		if err == nil {
			c.fleet = max(c.fleet, fleet)
		}
		if err != nil || c.IsClosed() || c.margin <= own {
			c.publishing = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// Shutdown makes later and waiting calls fail with throttle.ErrClosed and
// waits for a publication under way. It reports whether this call closed
// the core (false if it was closed already).
func (c *Core) Shutdown() bool {
	first := false
	c.closeOnce.Do(func() {
		first = true
		c.mu.Lock()
		close(c.closed)
		if c.cancelAsk != nil {
			c.cancelAsk()
		}
		c.mu.Unlock()
		c.publishers.Wait()
		c.admitters.Wait()
	})
	return first
}

// ReleaseHeld gives back every slot still held by admissions not yet
// released (the backend is closing), waiting for the store at most until
// ctx is done.
func (c *Core) ReleaseHeld(ctx context.Context) {
	c.mu.Lock()
	var slots []any
	for id, s := range c.held {
		if s != nil {
			slots = append(slots, s)
		}
		c.held[id] = nil
	}
	c.mu.Unlock()
	for _, s := range slots {
		c.store.ReleaseSlot(ctx, s)
	}
}

// Stats returns a snapshot of the backend's diagnostics: this process's
// counts, the weights the last decision reported, the fleet's widest
// margin, and the store's traffic as st says.
func (c *Core) Stats(st throttle.StoreStats) throttle.Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s throttle.Stats
	Fill(&s, c.tally, c.cf.Rules, func(i int) int { return c.used[i] })
	s.InFlight = c.inFlight
	s.PeakInFlight = c.peak
	s.MaxInFlight = c.cf.GlobalJobs
	s.SlotWaits = c.slotWaits
	s.SlotWaitTime = c.slotWait
	s.PauseReason = c.pause.Reason
	s.PausedUntil = c.pause.Until
	s.Margin = max(c.margin, c.fleet)
	s.Store = st
	return s
}

// Queued returns how many callers queue for the rates whose calls are not
// in the attempt under way (tests).
func (c *Core) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, w := range c.queue {
		if !w.asked {
			n++
		}
	}
	return n
}
