// Package throttletest provides a fake clock for testing code that uses
// package throttle, in the style of net/http/httptest.
package throttletest

import (
	"sort"
	"sync"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// FakeClock is a throttle.Clock whose time moves only when the test says
// so. Timers fire when Advance or Set moves the time to or past their
// deadline. It is safe for concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{} // closed and replaced whenever timers change
}

// NewFakeClock returns a fake clock set to t0.
func NewFakeClock(t0 time.Time) *FakeClock {
	return &FakeClock{now: t0, changed: make(chan struct{})}
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires once the fake time reaches Now()+d.
// A timer with d <= 0 fires at once.
func (c *FakeClock) NewTimer(d time.Duration) throttle.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, when: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers = append(c.timers, t)
	c.notifyLocked()
	return t
}

// Advance moves the time forward by d, firing due timers in deadline order.
func (c *FakeClock) Advance(d time.Duration) {
	c.Set(c.Now().Add(d))
}

// Set moves the time to t, firing due timers. t may be earlier than Now:
// the clock then goes backwards and no timer fires.
func (c *FakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].when.Before(c.timers[j].when) })
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if !tm.when.After(t) {
			tm.ch <- tm.when
			continue
		}
		kept = append(kept, tm)
	}
	clear(c.timers[len(kept):])
	c.timers = kept
	c.notifyLocked()
}

// Timers returns how many timers are pending.
func (c *FakeClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Next returns the deadline of the earliest pending timer, and false when
// there is none.
func (c *FakeClock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	next := c.timers[0].when
	for _, t := range c.timers[1:] {
		if t.when.Before(next) {
			next = t.when
		}
	}
	return next, true
}

// BlockUntilTimers blocks until at least n timers are pending.
func (c *FakeClock) BlockUntilTimers(n int) {
	for {
		c.mu.Lock()
		if len(c.timers) >= n {
			c.mu.Unlock()
			return
		}
		ch := c.changed
		c.mu.Unlock()
		<-ch
	}
}

// requires c.mu held.
func (c *FakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type fakeTimer struct {
	clock *FakeClock
	when  time.Time
	ch    chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, tm := range c.timers {
		if tm == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			c.notifyLocked()
			return true
		}
	}
	return false
}
