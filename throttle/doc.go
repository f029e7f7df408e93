// Package throttle keeps several rate rules at once ("10 per second AND 500
// per minute AND 10,000 per day") plus a cap on calls in flight.
//
// A Rule "N per W" means that no half-open window (t-W, t] holds more than
// N calls. Limiter is the combined in-memory limiter: it asks every rule how
// long a caller must wait, sleeps for the longest, asks again, and only when
// all rules allow records the call in every rule with one timestamp. That
// is what makes it exact where one limiter per rule, acquired one after the
// other, is not (see docs/design.md).
//
// Rules up to CounterAbove calls are kept in exact logs (one int64 per
// call); larger ones in bounded-memory sliding window counters that never
// admit more than N calls in any window.
//
// RedisLimiter does the same across processes and hosts, as one atomic Lua
// script per admission on the Redis server's clock.
//
// All time comes from a Clock; package throttletest has a fake one.
// Limiters are safe for concurrent use by multiple goroutines.
package throttle
