// Package fifo is the first-in, first-out lock the shared backends (and
// the learner, throttle/learn) queue their callers with: callers get it
// in the order they asked for it.
package fifo

import (
	"context"
	"slices"
	"sync"

	"github.com/pace-cli/pace/throttle"
)

// Lock is a FIFO lock. Its zero value is unlocked.
type Lock struct {
	mu      sync.Mutex
	busy    bool
	waiters []chan struct{} // a closed channel hands the lock over
}

// Lock takes q, waiting behind earlier callers, unless ctx is done or
// closed is closed first (then it returns throttle.ErrClosed).
func (q *Lock) Lock(ctx context.Context, closed <-chan struct{}) error {
	q.mu.Lock()
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	q.waiters = append(q.waiters, ch)
	q.mu.Unlock()
	var err error
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-closed:
		err = throttle.ErrClosed
	}
	q.mu.Lock()
	if i := slices.Index(q.waiters, ch); i >= 0 {
		q.waiters = slices.Delete(q.waiters, i, i+1)
		q.mu.Unlock()
		return err
	}
	q.mu.Unlock()
	// Handed the lock while giving up: pass it on.
	q.Unlock()
	return err
}

// Unlock hands q to the next caller in line, if any.
func (q *Lock) Unlock() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) > 0 {
		close(q.waiters[0])
		q.waiters = slices.Delete(q.waiters, 0, 1)
		return
	}
	q.busy = false
}

// Queued returns how many callers wait for q.
func (q *Lock) Queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiters)
}
