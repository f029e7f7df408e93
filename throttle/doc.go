// Package throttle keeps several rate rules at once ("10 per second AND 500
// per minute AND 10,000 per day", or "90,000 tokens per minute") plus a cap
// on calls in flight.
//
// A Rule "N per W" means that no half-open window (t-W, t] holds more than
// N calls, or, for a cost rule, calls whose costs add up to more than N.
// Limiter is the combined in-memory limiter: it asks every rule how long a
// caller must wait, sleeps for the longest, asks again, and only when all
// rules allow records the call in every rule with one timestamp. That is
// what makes it exact where one limiter per rule, acquired one after the
// other, is not (see docs/design.md).
//
// Every admission takes the same path: Admit blocks, AllowN decides at an
// instant the caller brings; both return an Admission that holds an
// in-flight slot until its Release, and Do wraps a function in an
// admission so that the release cannot be forgotten. An admission not yet
// released counts in Stats.InFlight whether or not a cap is set.
//
// Rules up to 100,000 calls are kept in exact logs (one entry per call);
// larger ones in bounded-memory sliding window counters that never admit
// more than N in any window (Options.CounterAbove).
//
// Backend is the contract every limiter backend satisfies: this package's
// Limiter, the Redis-backed one of package redisrate and the local store
// of package localstore. Check and Plan are an independent oracle: did a
// list of calls keep the rules, and what is the fastest legal schedule.
//
// The package uses only the standard library. Time comes from the time
// package (tests run in testing/synctest bubbles). Limiters are safe for
// concurrent use by multiple goroutines.
package throttle
