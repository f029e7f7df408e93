package throttle

import "sync/atomic"

// The bits of a lock's state; the rest counts parked waiters, in units of
// lockWaiter.
const (
	lockHeld   = 1 // a goroutine holds the lock
	lockWoken  = 2 // a parked waiter has been woken and not yet run
	lockWaiter = 4
)

// lock is the Limiter's mutex: sync.Mutex's normal mode, without its
// starvation mode and without spinning. A goroutine that finds it held
// parks at once (on a channel), and Unlock wakes one parked waiter at a
// time; a woken waiter competes with newcomers, and parks again if one
// got in first.
//
// It exists for contended admission: 8 goroutines admitting on 2 cores
// (BenchmarkAdmitContended) ran at 146-166 ns a call under it, and at
// 163-322 under sync.Mutex, with most goroutines parked on the mutex
// (GODEBUG=schedtrace showed empty run queues). The likely cause, not
// observed directly, is sync.Mutex's starvation mode: once a waiter has
// waited 1 ms, every Unlock hands the lock to the head waiter and yields
// to it, a goroutine switch per admission. Critical sections here are a
// clock read and a few rule updates, never a wait, so a waiter loses
// only to callers that hold the lock for that long; no caller's
// admission order depends on the lock (the queue of waiters is the
// Limiter's own). See docs/design.md, "Contended admission".
//
// The zero value is not usable: make one with newLock.
type lock struct {
	state atomic.Int32
	wake  chan struct{} // one token per waiter woken (lockWoken set)
}

func newLock() lock { return lock{wake: make(chan struct{}, 1)} }

// Lock locks m, parking until it is free.
func (m *lock) Lock() {
	for {
		old := m.state.Load()
		if old&lockHeld == 0 {
			if m.state.CompareAndSwap(old, old|lockHeld) {
				return
			}
			continue
		}
		// Held: count ourselves as parked, on the state the holder's
		// Unlock will subtract from, so that it cannot miss us.
		if !m.state.CompareAndSwap(old, old+lockWaiter) {
			continue
		}
		<-m.wake
		m.state.Add(-lockWaiter - lockWoken)
	}
}

// Unlock unlocks m and, if goroutines are parked and none has been woken
// yet, wakes one. Requires m held.
func (m *lock) Unlock() {
	s := m.state.Add(-lockHeld)
	// Wake one if some are parked, none is on its way, and nobody took
	// the lock meanwhile (its Unlock will wake one).
	for s != 0 && s&(lockHeld|lockWoken) == 0 {
		if m.state.CompareAndSwap(s, s|lockWoken) {
			// lockWoken was clear: the last token has been taken, and the
			// buffer has room.
			m.wake <- struct{}{}
			return
		}
		s = m.state.Load()
	}
}
