package throttle

import (
	"context"
	"sync"
	"time"
)

// slots is the concurrency stage: at most max calls in flight, handed out
// in FIFO order. max <= 0 means no cap; the slots are then only counted.
// It is safe for concurrent use.
type slots struct {
	max int

	mu       sync.Mutex
	used     int
	peak     int
	waiters  []chan struct{} // FIFO; a closed channel owns a slot
	waits    int64
	waitTime time.Duration
}

func newSlots(max int) *slots { return &slots{max: max} }

// acquire takes a slot, waiting for one in FIFO order. If ctx ends first
// it holds nothing and returns ctx's error.
func (s *slots) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.max <= 0 || (s.used < s.max && len(s.waiters) == 0) {
		s.takeLocked()
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	start := time.Now()
	s.mu.Unlock()

	select {
	case <-ch:
		// release handed its slot straight to us (and counted it).
		s.mu.Lock()
		s.waits++
		s.waitTime += max(time.Since(start), 0)
		s.mu.Unlock()
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for i, w := range s.waiters {
			if w == ch {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				s.mu.Unlock()
				return ctx.Err()
			}
		}
		s.mu.Unlock()
		// Granted while we were being cancelled: pass the slot on.
		s.release()
		return ctx.Err()
	}
}

// takeLocked counts one more slot in use. Requires s.mu held.
func (s *slots) takeLocked() {
	s.used++
	s.peak = max(s.peak, s.used)
}

// release gives a slot back, handing it to the first waiter if any.
func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiters) > 0 {
		// The slot passes from the releaser to the waiter: used is unchanged.
		ch := s.waiters[0]
		s.waiters[0] = nil
		s.waiters = s.waiters[1:]
		close(ch)
		return
	}
	s.used--
}

func (s *slots) snapshot() (inFlight, peak int, waits int64, waitTime time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used, s.peak, s.waits, s.waitTime
}
