// Package backend is what the author of a throttle.Backend needs and a
// caller of one does not: admissions that call back their backend when
// they are released or corrected. pace's own backends (throttle.Limiter,
// redisrate, localstore) use it, and so can a fake in a test. It also
// holds the one signal between a backend that queues its callers and a
// caller that keeps several admissions waiting in order (WithQueued).
package backend

import (
	"context"
	"os"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/internal/held"
	"github.com/pace-cli/pace/throttle/internal/link"
)

// An Owner is the backend behind the admissions it hands out: what an
// Admission's Release and Correct call.
type Owner interface {
	// Release gives back what the admission with handle h holds (its
	// in-flight slot). It must ignore a handle already released: every
	// copy of an admission may be released, and only the first counts.
	Release(h uint64)
	// Correct changes the cost recorded for the call id, admitted at at,
	// from from to to (Admission.Correct has checked that to is at least
	// 1 and differs from from). from is the cost last recorded for the
	// call, whichever copy of the admission recorded it: the admission
	// and its copies share it, so an Owner needs to keep nothing per call.
	// It returns ctx's error if ctx ends first.
	Correct(ctx context.Context, id uint64, at time.Time, from, to int) error
}

var (
	newAdmission = link.NewAdmission.(func(link.Owner, uint64, uint64, time.Time, int, time.Duration, time.Duration, bool) throttle.Admission)
	handleOf     = link.HandleOf.(func(throttle.Admission) (link.Owner, uint64))
)

// HandleOf returns the owner behind a and the handle its Release gives
// back (nil, 0 for an admission that holds nothing): what a backend
// needs to find what one of its own admissions holds.
func HandleOf(a throttle.Admission) (Owner, uint64) {
	o, h := handleOf(a)
	if o == nil {
		return nil, 0
	}
	return o, h
}

// Inheritable is a backend whose in-flight slots (its cap on calls in
// flight across processes) are held by open files, as the local store's
// file locks are. SlotFile returns the file of the slot admission a holds
// (nil if it holds none): a command started for the call inherits it, so
// that the slot stays held for as long as anything the command started
// runs, even after the process that took it was killed. The file stays
// the backend's: the caller must not close it.
type Inheritable interface {
	SlotFile(a throttle.Admission) *os.File
}

// NewAdmission returns an admission of a call of the given cost, recorded
// at at after a wait of waited, latency before Admit returns it. Its
// Release calls o.Release(h) and its Correct o.Correct(ctx, id, at, ...),
// from the cost last recorded, which the admission and its copies share
// (a small allocation). o may be nil for an admission that holds nothing
// and cannot be corrected.
func NewAdmission(o Owner, h, id uint64, at time.Time, cost int, waited, latency time.Duration) throttle.Admission {
	if o == nil {
		return newAdmission(nil, h, id, at, cost, waited, latency, false)
	}
	return newAdmission(o, h, id, at, cost, waited, latency, true)
}

type queuedKey struct{}

// WithQueued returns a context under which an Admit of a backend that
// queues its callers FIFO calls f once its caller holds its place in the
// queue, before Admit returns and on the goroutine that called it. A
// caller that keeps several admissions waiting in order starts the next
// Admit only after f (or the Admit's return, for a backend that never
// calls f): the next then queues behind it, and the backend can decide
// for the calls waiting together (the shared backends ask their store for
// all of them in one attempt). A backend may call f at most once.
func WithQueued(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, queuedKey{}, f)
}

// Queued calls the function WithQueued put in ctx, if any. A backend
// calls it once the caller holds its place in the queue.
func Queued(ctx context.Context) {
	if f, ok := ctx.Value(queuedKey{}).(func()); ok {
		f()
	}
}

// WithSlotHeld returns a context under which a Backend's Admit records a
// call under the rules without taking an in-flight slot (of a Limiter's
// MaxInFlight, or a fleet-wide cap): the caller already holds one for it.
// A redirect followed by a request admitted before is such a call: it
// reaches the server as a call of its own, so the rules count it, but it
// is in flight on the slot of the request it follows, and waiting for
// another slot while holding that one could wait forever.
func WithSlotHeld(ctx context.Context) context.Context { return held.With(ctx) }

// SlotHeld reports whether ctx comes from WithSlotHeld: a Backend that
// caps calls in flight takes no slot for an admission under it.
func SlotHeld(ctx context.Context) bool { return held.Slot(ctx) }
