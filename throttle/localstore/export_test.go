package localstore

import "time"

// Hooks for the external tests of package localstore (package
// localstore_test).

// SlotPoll is how often a caller waiting for a slot tries again.
const SlotPoll = slotPoll

// WithSlotPoll returns o with the interval at which a caller waiting for
// a slot tries again set to d.
func WithSlotPoll(o Options, d time.Duration) Options {
	o.slotPoll = d
	return o
}

// Advance is the store's time for a transaction reading clock after the
// latest record at last, when the clock read wall.
func Advance(last, wall, clock int64) int64 { return advance(last, wall, clock) }

// Queued returns how many callers queue for s's admission turn.
func Queued(s *Store) int { return s.core.Queued() }

// SetTxHook makes s call f in every admission transaction, once the call
// is recorded and before the transaction commits. Set it before the first
// admission.
func SetTxHook(s *Store, f func()) { s.txHook = f }

// CounterWidth is the bucket width of a counter for a window.
func CounterWidth(window time.Duration) time.Duration {
	return time.Duration(counterWidth(int64(window)))
}

// WithBoot returns o with the host's boot id taken to be boot, as after
// a reboot.
func WithBoot(o Options, boot string) Options {
	o.boot = boot
	return o
}

// SyncEvery is how old the last admission that waited for the disk may be
// before the next one waits too.
const SyncEvery = syncEvery

// KeepOpen says whether a Store keeps the store file open between its
// transactions on this system.
const KeepOpen = keepOpen

// Kept reports whether s keeps the store file open now.
func Kept(s *Store) bool {
	s.txMu.Lock()
	defer s.txMu.Unlock()
	return s.kept != nil
}
