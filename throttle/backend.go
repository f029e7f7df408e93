package throttle

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/pace-cli/pace/throttle/internal/link"
)

// Backend is the contract every limiter backend satisfies, whatever keeps
// its state: the in-memory Limiter, the Redis-backed limiter of package
// redisrate, and the local store of package localstore. A run sees only
// this contract; no caller needs to know which backend it has.
//
// A backend keeps a set of rules and, optionally, a cap on calls in
// flight. Admit takes a slot of the cap, then waits FIFO until every rule
// has room for the call's cost, and records the call in all of them at one
// instant. Everything else a backend cannot do is a no-op, never an error:
// a backend that cannot forget history accepts Seed and does nothing.
type Backend interface {
	// Admit waits until the call may go and records it. The Admission
	// says when it was recorded; its Release gives back the slot once
	// the call has ended (or use Do, which cannot forget it). On error
	// nothing is held. Errors: ctx's error, an error wrapping ErrBadCost
	// (the cost can never fit), ErrBackend (the store cannot decide), a
	// *MismatchError (the shared quota is kept with other rules) or
	// ErrClosed.
	Admit(ctx context.Context, cost int) (Admission, error)
	// PauseUntil admits nothing before t, whatever the rules say: a
	// server that answered 429 has the last word. reason says why. A
	// pause never shortens one already in force.
	PauseUntil(t time.Time, reason string)
	// Seed records calls made before the backend was opened, such as the
	// admissions of an earlier run's job log, so that a rule holds across
	// restarts. It must come before the first admission. A backend whose
	// state outlives a process (Redis, the local store) already knows
	// them and ignores it.
	Seed(calls []Call) error
	// SetMargin widens every rule's window by d from now on, so that a
	// server whose clock or counting differs a little still sees every
	// rule kept. A backend shared between processes widens every window
	// by the widest margin in force among them (Stats.Margin), so that a
	// call admitted a window after another process's is protected from
	// that process's lags too; a margin wider than that reaches the
	// others before this process admits again.
	SetMargin(d time.Duration)
	// Stats returns a snapshot of the backend's diagnostics.
	Stats() Stats
	// Close releases what the backend holds (slots, connections, files)
	// and makes later admissions fail with ErrClosed.
	Close() error
}

// Call is one call a rule counts: when it was admitted, and its cost.
type Call struct {
	At   time.Time
	Cost int // at least 1; count rules count every call as 1
}

// ErrBackend is wrapped by the errors a backend returns when its store
// cannot decide: no answer within its timeout, or an answer that retrying
// cannot fix. A backend never admits a call it could not record, so the
// caller should stop (pace exits with status 3).
var ErrBackend = errors.New("backend unavailable")

// ErrClosed is returned by the methods of a closed backend.
var ErrClosed = errors.New("throttle: limiter closed")

// A MismatchError is the error a shared backend returns when the quota is
// kept by other processes with another rule set: from its constructor
// before anything runs, or from an admission if a process with other rules
// slipped in meanwhile. Check for it with errors.As.
type MismatchError struct {
	Key    string // the quota's name
	Stored string // the rule spec the quota is kept with
	Spec   string // this process's rule spec
}

// Error says which rules differ and what to do.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("throttle: quota %q is kept with rules %q, this process has %q "+
		"(use the same rules everywhere, another quota name, or wait for the quota's longest window to pass unused)",
		e.Key, e.Stored, e.Spec)
}

// Admission is one admitted call. It is a small value: Admit returns it
// without allocating, but for one small cell, shared by the admission and
// its copies, where the backend needs the cost last recorded for a
// correction (a cost rule kept by a counter, or any cost rule of Redis or
// the local store). The collector frees it with the last copy: a backend
// keeps nothing per call corrected.
// Release gives back its in-flight slot once the call has ended; Correct
// changes the cost recorded for it when its true cost is known only
// afterwards.
//
// Every admission counts as in flight (Stats.InFlight) until it is
// released, with or without a cap on calls in flight, so an admission
// never released shows in Stats long before a cap would make it hang
// everything. Do admits, runs a function and releases, so that a release
// cannot be forgotten.
type Admission struct {
	// At is the instant every rule recorded the call, on the backend's
	// clock (Redis's for a Redis backend).
	At time.Time
	// Cost is the cost recorded for the call.
	Cost int
	// Waited is how long Admit took: the slot, the rules and any pause.
	Waited time.Duration
	// Latency is how long before Admit returned the backend recorded the
	// call, as well as the backend can tell: for a remote store, half the
	// round trip that carried the admission plus the time from its reply
	// to the return (the hand-over to the waiting caller); on this machine's clock
	// (in memory, the local store), the time from the record to the
	// return, which a busy machine can stretch (a waiter admitted by
	// another goroutine waits to run; in memory, a call admitted at once
	// on the caller's goroutine has 0). A backend in front of another (a
	// learner, a logger) adds the time it spends after the other returned.
	// A caller measuring when its call really left after At adds it to
	// what its own clock shows.
	Latency time.Duration

	owner  link.Owner
	handle uint64 // what Release gives back
	id     uint64 // the call in the rules, for Correct
	// local is the record's instant on this machine's monotonic clock
	// (At itself in memory; for a store, Admit's return less Latency);
	// zero where the backend did not say (see Lag).
	local time.Time
	// last is the cost last recorded for the call, shared by the
	// admission and its copies, so that whichever copy corrects tells
	// the backend the cost it replaces; nil where the backend needs none
	// (no rule counts costs, or only logs, which keep each call's cost).
	last *recorded
}

// recorded is the cost last recorded for a call. Admission.Correct reads
// and sets it. Corrections of copies must not be concurrent (Correct),
// but a caller who makes them so gets a wrong count, not a data race.
type recorded struct{ cost atomic.Int64 }

// newRecorded returns a cell holding cost, for an admission whose backend
// needs the cost last recorded (see Admission.last).
func newRecorded(cost int) *recorded {
	r := new(recorded)
	r.cost.Store(int64(cost))
	return r
}

// Lag returns how long after the backend recorded the call the instant t
// came, on this machine's clock: how late a call that left at t left.
// returned is when Admit returned to the caller, for an admission that
// does not know its record's local instant (one built as a literal),
// which is then taken as Latency before returned. Counting from the
// record itself, not from a clock read after Admit returned, keeps the
// time a busy machine held the caller between the two (45 ms and more
// was seen at load 10, which a margin must cover).
func (a Admission) Lag(returned, t time.Time) time.Duration {
	if !a.local.IsZero() {
		return t.Sub(a.local)
	}
	return a.Latency + t.Sub(returned)
}

func init() {
	link.NewAdmission = func(o link.Owner, handle, id uint64, at time.Time, cost int, waited, latency time.Duration, last bool) Admission {
		a := Admission{At: at, Cost: cost, Waited: waited, Latency: latency, owner: o, handle: handle, id: id, local: time.Now().Add(-latency)}
		if last {
			a.last = newRecorded(cost)
		}
		return a
	}
	link.HandleOf = func(a Admission) (link.Owner, uint64) { return a.owner, a.handle }
	link.IdentityOf = func(a Admission) (link.Owner, uint64, uint64, time.Time) { return a.owner, a.handle, a.id, a.local }
}

// Release gives back the in-flight slot the call held. Calling it again,
// on the admission or on a copy of it, has no further effect. The zero
// Admission holds nothing.
func (a *Admission) Release() {
	if a.owner != nil {
		a.owner.Release(a.handle)
	}
}

// Correct records cost instead of a.Cost for the call, at its admission
// instant, for rules that count costs. A lower cost frees room at once; a
// higher one makes later calls wait until the rules hold for the true
// costs. The past cannot be undone: a window that held more than N because
// the estimate was low stays over, but nothing more is admitted into it
// until it holds less than N again. A cost above MaxLimit counts as
// MaxLimit, which fills any rule. Correct sets a.Cost. As with Release,
// copies are fine: whichever copy corrects, the call counts what the last
// correction said (only the copy corrected learns the new Cost, but the
// backend is told the cost last recorded, which the copies share).
// Correct may come before or after Release; it must not be called
// concurrently with itself for one admission or a copy of it. A shared
// backend records the correction in its store: ctx bounds that wait (a
// Redis that does not answer is retried, as for Admit), and if ctx ends
// first Correct returns its error and a.Cost is left as it was, though
// the store may still record the correction.
func (a *Admission) Correct(ctx context.Context, cost int) error {
	if cost < 1 {
		return fmt.Errorf("throttle: cost %d: %w", cost, ErrBadCost)
	}
	// A cost above the largest limit fills any rule: counted as more, it
	// would overflow the sums a window keeps.
	cost = min(cost, MaxLimit)
	from := a.Cost
	if a.last != nil {
		// What the last correction recorded, whichever copy made it.
		from = int(a.last.cost.Load())
		if from == cost {
			a.Cost = cost
			return nil
		}
	}
	// Without the cell, even a cost equal to a.Cost goes to the backend:
	// a copy corrected meanwhile may have recorded another (a log keeps
	// each call's cost, and needs no from).
	if a.owner != nil {
		if err := a.owner.Correct(ctx, a.id, a.At, from, cost); err != nil {
			return err
		}
	}
	if a.last != nil {
		a.last.cost.Store(int64(cost))
	}
	a.Cost = cost
	return nil
}

// Do admits a call of the given cost through b, runs fn with its
// admission, and releases the admission when fn returns, whatever fn
// does. It returns Admit's error if the call was not admitted (fn does
// not run), else fn's. fn may Correct the admission's cost.
func Do(ctx context.Context, b Backend, cost int, fn func(a *Admission) error) error {
	a, err := b.Admit(ctx, cost)
	if err != nil {
		return err
	}
	defer a.Release()
	return fn(&a)
}
