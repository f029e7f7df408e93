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
// grown to the most calls ever in flight.
//
// The Limiter's mutex guards it (the methods ending in Locked require it
// held), so that an admission that finds a slot and room at once takes
// the lock once.
type slots struct {
	max      int
	used     int
	peak     int
	waiters  []chan struct{} // FIFO; a closed channel owns a slot
	waits    int64
	waitTime time.Duration
	gen      []uint32 // generation of each handle index
	free     []uint32 // handle indexes not in use
}

// takeLocked takes a slot if one is free at once and nobody waits for
// one, and returns its handle.
func (s *slots) takeLocked() (uint64, bool) {
	if s.max > 0 && (s.used >= s.max || len(s.waiters) > 0) {
		return 0, false
	}
	s.used++
	s.peak = max(s.peak, s.used)
	return s.handleLocked(), true
}

// acquireSlow waits, in FIFO order, for a slot that takeLocked could not
// take, and returns its handle and how long it waited. It requires mu
// held, and returns with mu unlocked. If ctx ends first it holds nothing
// and returns ctx's error.
func (s *slots) acquireSlow(ctx context.Context, mu *sync.Mutex) (uint64, time.Duration, error) {
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	start := time.Now()
	mu.Unlock()

	select {
	case <-ch:
		// releaseLocked handed its slot straight to us (and counted it).
		waited := max(time.Since(start), 0)
		mu.Lock()
		s.waits++
		s.waitTime += waited
		h := s.handleLocked()
		mu.Unlock()
		return h, waited, nil
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
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

// handleLocked returns a free handle.
func (s *slots) handleLocked() uint64 {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		return uint64(i)<<32 | uint64(s.gen[i])
	}
	s.gen = append(s.gen, 0)
	return uint64(len(s.gen)-1) << 32
}

// releaseLocked gives back the slot of handle h, handing it to the first
// waiter if any. A handle already released is ignored.
func (s *slots) releaseLocked(h uint64) {
	i := h >> 32
	if i >= uint64(len(s.gen)) || s.gen[i] != uint32(h) {
		return
	}
	s.gen[i]++
	s.free = append(s.free, uint32(i))
	s.giveLocked()
}

// giveLocked gives a slot back.
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
