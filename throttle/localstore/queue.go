package localstore

import (
	"context"
	"slices"
	"sync"

	"github.com/pace-cli/pace/throttle"
)

// queue is a FIFO lock: callers get it in the order they asked.
type queue struct {
	mu      sync.Mutex
	busy    bool
	waiters []chan struct{} // a closed channel hands the lock over
}

// lock takes q, waiting behind earlier callers, unless ctx is done or
// closed is closed first.
func (q *queue) lock(ctx context.Context, closed <-chan struct{}) error {
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
	q.unlock()
	return err
}

// unlock hands q to the next caller in line, if any.
func (q *queue) unlock() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) > 0 {
		close(q.waiters[0])
		q.waiters = slices.Delete(q.waiters, 0, 1)
		return
	}
	q.busy = false
}

// queued returns how many callers wait for q.
func (q *queue) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiters)
}
