package throttle

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// slots is the concurrency stage: at most max calls in flight, handed out
// in FIFO order. max <= 0 means no cap; the slots are then only counted,
// so that an admission never released shows in Stats.InFlight.
//
// Each slot taken gets a handle (see handles): a second release of the
// same handle, or of a copy of its Admission, is ignored.
//
// With a cap, the Limiter's mutex guards it (the methods ending in Locked
// require it held), so that an admission that finds a slot and room at
// once takes the lock once. Without a cap, taking a slot (take) and
// giving it back (release) take no lock at all: under contention the lock
// is what callers queue for, and counting slots under it would make every
// call hold it longer, or queue twice.
type slots struct {
	used     atomic.Int64 // slots held; changed without the lock only without a cap
	peak     atomic.Int64 // the most slots ever held at once
	handles  handles
	max      int
	waiters  []chan struct{} // FIFO; a closed channel owns a slot
	waits    int64
	waitTime time.Duration
}

// noSlot is the handle of an admission that took no slot (WithSlotHeld):
// no handle is ever that, so releasing it gives back nothing.
const noSlot = ^uint64(0)

// take takes a slot without a cap, and returns its handle. It takes no
// lock. Requires s.max <= 0.
func (s *slots) take() uint64 {
	s.count()
	return s.handles.take()
}

// takeLocked takes a slot if one is free at once and nobody waits for
// one, and returns its handle.
func (s *slots) takeLocked() (uint64, bool) {
	if s.max > 0 && (s.used.Load() >= int64(s.max) || len(s.waiters) > 0) {
		return 0, false
	}
	s.count()
	return s.handles.take(), true
}

// count counts one more slot held, and the peak.
func (s *slots) count() {
	n := s.used.Add(1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
}

// acquireSlow waits, in FIFO order, for a slot that takeLocked could not
// take, and returns its handle and how long it waited. It requires mu
// held, and returns with mu unlocked. If ctx ends first it holds nothing
// and returns ctx's error; if done is closed first (the limiter's Close),
// ErrClosed.
func (s *slots) acquireSlow(ctx context.Context, done <-chan struct{}, mu *lock) (uint64, time.Duration, error) {
	ch := make(chan struct{})
	s.waiters = append(s.waiters, ch)
	start := time.Now()
	mu.Unlock()

	select {
	case <-ch:
		// release handed its slot straight to us (and counted it).
		waited := max(time.Since(start), 0)
		mu.Lock()
		s.waits++
		s.waitTime += waited
		mu.Unlock()
		h := s.handles.take()
		return h, waited, nil
	case <-ctx.Done():
		return 0, 0, s.leave(ch, mu, ctx.Err())
	case <-done:
		return 0, 0, s.leave(ch, mu, ErrClosed)
	}
}

// leave takes the waiter ch out of the queue for a slot, passing the slot
// on if it was granted meanwhile, and returns err.
func (s *slots) leave(ch chan struct{}, mu *lock, err error) error {
	mu.Lock()
	defer mu.Unlock()
	for i, w := range s.waiters {
		if w == ch {
			s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
			return err
		}
	}
	// Granted while we were leaving: pass the slot on.
	s.giveLocked()
	return err
}

// release gives back the slot of handle h, handing it to the first
// waiter if any. A handle already released is ignored. Without a cap it
// takes no lock: nobody can be waiting for a slot, so giving one back is
// only counting. With one it takes mu, to hand the slot over.
func (s *slots) release(h uint64, mu *lock) {
	if !s.handles.release(h) {
		return
	}
	if s.max <= 0 {
		s.used.Add(-1)
		return
	}
	mu.Lock()
	s.giveLocked()
	mu.Unlock()
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
	s.used.Add(-1)
}

// handleChunk is how many handles a block of the handle table holds.
const handleChunk = 256

// handles hands out the handles of slots: an index into a table and that
// index's generation. Releasing a handle bumps its index's generation, so
// that a second release of the same handle is ignored, and frees the
// index for reuse: admitting allocates nothing once the table has grown to
// the most calls ever in flight.
//
// Neither take nor release takes a lock (growing the table does). The
// table grows by blocks that never move, and the free indexes form a
// stack linked through the table, pushed and popped with
// compare-and-swap. The top of the stack carries a tag that every push
// and pop bumps, so that a pop cannot be fooled by an index that left the
// stack and came back meanwhile (ABA): that would take 2^32 pushes and
// pops between the pop's read and its compare-and-swap.
type handles struct {
	free   atomic.Uint64                               // top of the free stack: tag<<32 | index+1, index+1 = 0 when empty
	n      atomic.Uint32                               // indexes ever handed out
	grow   sync.Mutex                                  // held to grow blocks
	blocks atomic.Pointer[[]*[handleChunk]handleEntry] // replaced, never changed, when it grows
}

type handleEntry struct {
	gen  atomic.Uint32 // bumped by every release
	next atomic.Uint32 // the free index below this one on the stack: index+1, 0 for none
}

// entry returns index i's entry. Requires i < the indexes handed out.
func (hs *handles) entry(i uint32) *handleEntry {
	return &(*hs.blocks.Load())[i/handleChunk][i%handleChunk]
}

// take returns a free handle.
func (hs *handles) take() uint64 {
	for {
		top := hs.free.Load()
		i := uint32(top)
		if i == 0 {
			break
		}
		e := hs.entry(i - 1)
		if hs.free.CompareAndSwap(top, (top>>32+1)<<32|uint64(e.next.Load())) {
			return uint64(i-1)<<32 | uint64(e.gen.Load())
		}
	}
	i := hs.n.Add(1) - 1
	if p := hs.blocks.Load(); p == nil || i/handleChunk >= uint32(len(*p)) {
		hs.growTo(i/handleChunk + 1)
	}
	return uint64(i) << 32
}

// growTo makes the table at least n blocks long.
func (hs *handles) growTo(n uint32) {
	hs.grow.Lock()
	defer hs.grow.Unlock()
	var old []*[handleChunk]handleEntry
	if p := hs.blocks.Load(); p != nil {
		old = *p
	}
	if uint32(len(old)) >= n {
		return
	}
	grown := slices.Clone(old)
	for uint32(len(grown)) < n {
		grown = append(grown, new([handleChunk]handleEntry))
	}
	hs.blocks.Store(&grown)
}

// release frees handle h and reports whether it was taken: false for a
// handle already released (or never handed out).
func (hs *handles) release(h uint64) bool {
	p := hs.blocks.Load()
	i, gen := uint32(h>>32), uint32(h)
	if p == nil || i/handleChunk >= uint32(len(*p)) || i >= hs.n.Load() {
		return false
	}
	e := &(*p)[i/handleChunk][i%handleChunk]
	if !e.gen.CompareAndSwap(gen, gen+1) {
		return false
	}
	for {
		top := hs.free.Load()
		e.next.Store(uint32(top))
		if hs.free.CompareAndSwap(top, (top>>32+1)<<32|uint64(i+1)) {
			return true
		}
	}
}
