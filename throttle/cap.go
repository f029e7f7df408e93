package throttle

import (
	"context"
	"sync"
	"time"
)

// slots is the concurrency stage: at most max calls in flight, handed out
// in FIFO order. max <= 0 means no cap; the slots are then only counted,
// so that an admission never released shows in Stats.InFlight.
//
// Each slot taken gets a handle, an index into gen and that index's
// generation: releasing a handle bumps the generation, so a second
// release of the same handle (or of a copy of its Admission) is ignored.
// Handles are reused, so that admitting allocates nothing once gen has
// grown to the most calls ever in flight. It is safe for concurrent use.
type slots struct {
	max int

	mu       sync.Mutex
	used     int
	peak     int
	waiters  []chan struct{} // FIFO; a closed channel owns a slot
	waits    int64
	waitTime time.Duration
	gen      []uint32 // generation of each handle index
	free     []uint32 // handle indexes not in use
}

// acquire takes a slot, waiting for one in FIFO order, and returns its
// handle and how long it waited. If ctx ends first it holds nothing and
// returns ctx's error.
func (s *slots) acquire(ctx context.Context) (uint64, time.Duration, error) {
	s.mu.Lock()
	if s.max <= 0 || (s.used < s.max && len(s.waiters) == 0) {
		s.used++
		s.peak = max(s.peak, s.used)
		h := s.handleLocked()
		s.mu.Unlock()
		return h, 0, nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	start := time.Now()
	s.mu.Unlock()

	select {
	case <-ch:
		// release handed its slot straight to us (and counted it).
		waited := max(time.Since(start), 0)
		s.mu.Lock()
		s.waits++
		s.waitTime += waited
		h := s.handleLocked()
		s.mu.Unlock()
		return h, waited, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, w := range s.waiters {
			if w == ch {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				return 0, 0, ctx.Err()
			}
		}
		// Granted while we were being cancelled: pass the slot on.
		s.giveLocked()
		return 0, 0, ctx.Err()
	}
}

// tryAcquire takes a slot if one is free at once.
func (s *slots) tryAcquire() (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.max > 0 && (s.used >= s.max || len(s.waiters) > 0) {
		return 0, false
	}
	s.used++
	s.peak = max(s.peak, s.used)
	return s.handleLocked(), true
}

// handleLocked returns a free handle. Requires s.mu held.
func (s *slots) handleLocked() uint64 {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		return uint64(i)<<32 | uint64(s.gen[i])
	}
	s.gen = append(s.gen, 0)
	return uint64(len(s.gen)-1) << 32
}

// release gives back the slot of handle h, handing it to the first waiter
// if any. A handle already released is ignored.
func (s *slots) release(h uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := h >> 32
	if i >= uint64(len(s.gen)) || s.gen[i] != uint32(h) {
		return
	}
	s.gen[i]++
	s.free = append(s.free, uint32(i))
	s.giveLocked()
}

// giveLocked gives a slot back. Requires s.mu held.
func (s *slots) giveLocked() {
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
