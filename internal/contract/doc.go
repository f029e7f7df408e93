// Package contract holds the one test every throttle.Backend pace ships
// must pass (the in-memory Limiter, the local store, Redis, and the
// learner in front of one): what the godoc of throttle.Backend and
// throttle.Admission promises, checked alike for each. It has no code of
// its own; it is a package so that its test may import every backend.
package contract
