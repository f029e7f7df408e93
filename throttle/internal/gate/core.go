package gate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/backend"
	"github.com/pace-cli/pace/throttle/internal/fifo"
	"github.com/pace-cli/pace/throttle/internal/tally"
)

// Store is what a shared backend brings to its Core: the store's
// decisions and its slots. Everything between decisions (the FIFO turn,
// the wait loop, pauses, margins, the tally, calls in flight) is the
// Core's. Its methods are called by one caller at a time per kind: Admit
// under the admission turn, TrySlot under the slot turn.
type Store interface {
	// Admit runs one admission attempt for a call of the given cost, with
	// every window widened by the wider of margin (this process's) and the
	// margins of the other processes sharing the quota.
	Admit(ctx context.Context, cost int, margin time.Duration) (Decision, error)
	// Correct changes the cost recorded for the call id, admitted at at,
	// from one cost to another, and returns each rule's use in the given
	// order after it (-1 where the store did not say).
	Correct(id uint64, at time.Time, from, to int, margin time.Duration) ([]int, error)
	// Publish records margin in the store at once and returns the widest
	// margin in force among the processes sharing the quota.
	Publish(ctx context.Context, margin time.Duration) (time.Duration, error)
	// TrySlot tries once to take a slot of the cap on calls in flight for
	// the caller attempt (the same for every try of one caller, so that a
	// try whose answer was lost is not a second slot). If none is free it
	// returns ok false and how long to wait before trying again.
	TrySlot(ctx context.Context, attempt uint64) (slot any, ok bool, retry time.Duration, err error)
	// ReleaseSlot gives back a slot TrySlot took.
	ReleaseSlot(slot any)
}

// Decision is the outcome of one admission attempt.
type Decision struct {
	Admitted bool
	At       time.Time     // the store's instant
	ID       uint64        // the call's id in the store, if admitted
	Wait     time.Duration // how long before the call could fit, if refused
	Rule     int           // if refused: the rule (given order) needing the longest wait
	Used     []int         // per rule, given order: the weight in the window
	Fleet    time.Duration // the widest margin in force, which the decision applied
	// Latency is how long before Admit returns the store recorded the
	// call; if Decided is set, the time since then instead.
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
// decisions: one caller at a time asks the store (FIFO within the
// process), sleeps what the store says plus jitter, sleeps out a server's
// pause, widens windows by the margin and publishes a wider one, counts
// admissions and what they waited on, keeps the calls in flight and the
// slots they hold, and hands out admissions. It is safe for concurrent
// use.
type Core struct {
	cf    Config
	store Store

	admitTurn fifo.Lock // one caller at a time asks the store for the rates
	slotTurn  fifo.Lock // one caller at a time waits for a slot

	closed     chan struct{}
	closeOnce  sync.Once
	publishers sync.WaitGroup
	seq        atomic.Uint64 // ids of admissions without rules
	slotSeq    atomic.Uint64 // ids of the callers waiting for slots

	mu         sync.Mutex
	margin     time.Duration
	fleet      time.Duration // the widest margin in force, at the last decision
	publishing bool
	tally      *tally.Tally
	used       []int         // per rule in given order: weight in the window at the last decision
	sleeps     int64         // times the head of the admission queue slept
	trip       time.Duration // the quickest the store answered an admission attempt; -1 before one
	pause      Pause
	held       map[uint64]any // admission id -> the slot it holds (nil for none)
	inFlight   int
	peak       int
	slotWaits  int64
	slotWait   time.Duration
}

// NewCore returns the core of a backend keeping cf.Rules in store.
func NewCore(cf Config, store Store) *Core {
	cf.Margin = max(cf.Margin, 0)
	return &Core{
		cf:     cf,
		store:  store,
		closed: make(chan struct{}),
		margin: cf.Margin,
		tally:  tally.New(len(cf.Rules)),
		used:   make([]int, len(cf.Rules)),
		held:   make(map[uint64]any),
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
	if c.cf.GlobalJobs > 0 {
		var err error
		if slot, err = c.takeSlot(ctx); err != nil {
			return throttle.Admission{}, err
		}
	}
	d, err := c.wait(ctx, cost)
	if err != nil {
		if slot != nil {
			c.store.ReleaseSlot(slot)
		}
		return throttle.Admission{}, err
	}
	c.mu.Lock()
	c.inFlight++
	c.peak = max(c.peak, c.inFlight)
	c.held[d.ID] = slot // nil without a slot: the admission is in flight all the same
	c.mu.Unlock()
	latency := d.Latency
	if !d.Decided.IsZero() {
		latency = time.Since(d.Decided)
	}
	return backend.NewAdmission((*owner)(c), d.ID, d.ID, d.At, cost, time.Since(start), latency), nil
}

// wait waits until the store admits a call of the given cost and returns
// the decision that did.
func (c *Core) wait(ctx context.Context, cost int) (Decision, error) {
	if err := Usable(ctx, c.closed); err != nil {
		return Decision{}, err
	}
	if len(c.cf.Rules) == 0 {
		c.mu.Lock()
		c.tally.Admit(0)
		c.mu.Unlock()
		return Decision{Admitted: true, At: time.Now(), ID: c.seq.Add(1)}, nil
	}
	arrived := time.Now()
	c.mu.Lock()
	sleeps := c.sleeps
	c.mu.Unlock()
	if err := c.admitTurn.Lock(ctx, c.closed); err != nil {
		return Decision{}, err
	}
	defer c.admitTurn.Unlock()
	for {
		if err := c.sleepPause(ctx); err != nil {
			return Decision{}, err
		}
		asked := time.Now()
		d, err := c.store.Admit(ctx, cost, c.Margin())
		if err != nil {
			return Decision{}, err
		}
		took := time.Since(asked)
		c.mu.Lock()
		if c.trip < 0 || took < c.trip {
			c.trip = took
		}
		copy(c.used, d.Used)
		c.fleet = d.Fleet
		if d.Admitted {
			var waited time.Duration
			if c.sleeps != sleeps {
				waited = max(time.Since(arrived), 1)
			}
			for i, u := range c.used {
				c.tally.Observe(i, u)
			}
			c.tally.Admit(waited)
			c.mu.Unlock()
			return d, nil
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
		if err := Sleep(ctx, c.closed, sleep+Jitter(sleep, c.cf.Jitter)); err != nil {
			return Decision{}, err
		}
	}
}

// sleepPause sleeps out a pause set by PauseUntil. Requires the admission
// turn held.
func (c *Core) sleepPause(ctx context.Context) error {
	for {
		c.mu.Lock()
		d := time.Until(c.pause.Until)
		if d <= 0 {
			c.mu.Unlock()
			return nil
		}
		c.sleeps++
		c.tally.BlockedOnPause()
		c.mu.Unlock()
		if err := Sleep(ctx, c.closed, d); err != nil {
			return err
		}
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
				c.store.ReleaseSlot(slot)
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
		c.store.ReleaseSlot(slot)
	}
}

// Correct changes the cost recorded for the admission id in the cost
// rules still holding it.
func (o *owner) Correct(id uint64, at time.Time, from, to int) error {
	c := (*Core)(o)
	used, err := c.store.Correct(id, at, from, to, c.Margin())
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
// this one next admits a call. A negative d is treated as 0.
func (c *Core) SetMargin(d time.Duration) {
	d = max(d, 0)
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
		c.mu.Unlock()
		c.publishers.Wait()
	})
	return first
}

// ReleaseHeld gives back every slot still held by admissions not yet
// released (the backend is closing).
func (c *Core) ReleaseHeld() {
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
		c.store.ReleaseSlot(s)
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

// Queued returns how many callers queue for the admission turn (tests).
func (c *Core) Queued() int { return c.admitTurn.Queued() }
