package cmd

import (
	"context"
	"os"
	"time"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// Factory holds what commands need from the outside world, so that tests
// can replace it: streams, clock, and the channel on which interrupts
// arrive.
type Factory struct {
	IOStreams *IOStreams
	// Clock drives the limiter, the summary's timings and the grace
	// period after an interrupt.
	Clock throttle.Clock
	// Signals delivers SIGINT and SIGTERM; nil means none ever come.
	Signals <-chan os.Signal
	// NewLimiter, if set, makes the limiter instead of throttle.New (tests
	// use it to simulate a failing backend).
	NewLimiter func(o *CommonOptions) (Limiter, error)
}

// Limiter is what a run needs from a limiter: admissions and statistics.
// *throttle.Limiter is one.
type Limiter interface {
	Acquire(ctx context.Context) (release func(), err error)
	Stats() throttle.Stats
}

// admit admits through l, with the admission instant when l reports one
// (see runner.Admitter), else a zero time.
func admit(ctx context.Context, l Limiter) (time.Time, func(), error) {
	if a, ok := l.(runner.Admitter); ok {
		return a.Admit(ctx)
	}
	release, err := l.Acquire(ctx)
	return time.Time{}, release, err
}

// NewFactory returns the factory for a real run: system streams and
// clock, and the given signal channel.
func NewFactory(signals <-chan os.Signal) *Factory {
	return &Factory{IOStreams: System(), Clock: throttle.SystemClock(), Signals: signals}
}
