// Package link is what package throttle shares with the backends beside
// it (redisrate, localstore) and nothing else may see: the owner behind
// an admission, and the constructor of admissions, which package throttle
// sets when it is initialised. It imports only the standard library, so
// that throttle can import it.
package link

import (
	"context"
	"time"
)

// MaxWindow is the longest window a rule may have, and the widest margin
// a backend applies (ClampMargin): window arithmetic on nanosecond
// offsets, a window widened by the widest margin included, stays well
// inside int64 (about 292 years).
const MaxWindow = 100 * 365 * 24 * time.Hour

// ClampMargin bounds a margin to [0, MaxWindow]: a negative one counts as
// none, a wider one as MaxWindow. A window widened by it then stays within
// int64 nanoseconds (two centuries), where a wider one would overflow
// into a negative width that holds no call at all.
func ClampMargin(d time.Duration) time.Duration { return min(max(d, 0), MaxWindow) }

// CounterAbove is the default size above which a rule is kept by a
// bounded sliding window counter instead of an exact log.
const CounterAbove = 100_000

// An Owner is the backend behind admissions: what an Admission's Release
// and Correct call.
type Owner interface {
	// Release gives back what the admission with handle h holds (its
	// in-flight slot). A handle already released is ignored, so that
	// Release is idempotent whatever copies of an admission exist.
	Release(h uint64)
	// Correct changes the cost recorded for the call id, admitted at at,
	// from from to to. For an admission made with last, from is the cost
	// last recorded for the call, whichever copy of the admission recorded
	// it; without, the corrected admission's Cost, which a copy corrected
	// before may have made stale (to, even).
	Correct(ctx context.Context, id uint64, at time.Time, from, to int) error
}

// NewAdmission is set by package throttle to a
//
//	func(o Owner, handle, id uint64, at time.Time, cost int, waited, latency time.Duration, last bool) throttle.Admission
//
// With last, the admission and its copies share a cell holding the cost
// last recorded for the call (one small allocation), which their Correct
// gives the owner as from: what an owner that keeps only sums, or
// changes a cost only where it finds the one replaced, needs.
// It is an any because this package cannot name throttle's types; the
// shared backends' core (package gate) asserts it once.
var NewAdmission any

// HandleOf is set by package throttle to a
//
//	func(throttle.Admission) (Owner, uint64)
//
// returning an admission's owner and the handle its Release gives back.
var HandleOf any

// IdentityOf is set by package throttle to a
//
//	func(throttle.Admission) (o Owner, handle, id uint64, local time.Time)
//
// returning what an admission carries besides its exported fields: with
// them, what tells two admissions apart (the learner finds the one the
// server refused by them).
var IdentityOf any
