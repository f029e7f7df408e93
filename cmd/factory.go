package cmd

import (
	"context"
	"io"
	"os"

	"github.com/pace-cli/pace/internal/limiter"
	"github.com/pace-cli/pace/throttle"
)

// Factory holds what commands need from the outside world, so that tests
// can replace it: streams, the channel on which interrupts arrive, and
// how a run's limiter is made.
type Factory struct {
	IOStreams *IOStreams
	// Signals delivers SIGINT and SIGTERM; nil means none ever come.
	Signals <-chan os.Signal
	// OpenBackend, if set, makes the limiter of a run instead of
	// limiter.Open (tests simulate a failing store with it). Messages
	// about the backend go to w.
	OpenBackend func(ctx context.Context, o limiter.Options, w io.Writer) (throttle.Backend, error)
	// exits says that the process exits once Execute returns (Main):
	// pace exec leaves the signals it caught for its command caught.
	exits bool
	// reaper and reaperPath, if set, start pace's reaper (pace reaper,
	// command.Executor.Reaper) for pace run's jobs: Main sets them; tests
	// running pace in their own process start none.
	reaper     []string
	reaperPath string
	// checkStdio, if set (Main, for pace exec), refuses a stdout closed
	// when pace started, and says so: pace exec calls it unless it runs
	// nothing (--wait-only), when it writes nothing on stdout.
	checkStdio func() (code int, ok bool)
	// catchStops, if set, makes SIGHUP and SIGQUIT arrive on Signals too,
	// for the commands that stop on them (run, fetch, proxy, and pace
	// exec until its command starts), and returns what gives them back
	// to their default action (pace exec's command is sent them then).
	catchStops func() (uncatch func())
}

// catchStopSignals makes SIGHUP and SIGQUIT arrive on Signals, if the
// factory catches them, until uncatch is called, if ever.
func (f *Factory) catchStopSignals() (uncatch func()) {
	if f.catchStops != nil {
		return f.catchStops()
	}
	return func() {}
}

// openBackend makes the limiter of a run with o.
func (f *Factory) openBackend(ctx context.Context, o limiter.Options, w io.Writer) (throttle.Backend, error) {
	if f.OpenBackend != nil {
		return f.OpenBackend(ctx, o, w)
	}
	return limiter.Open(ctx, o, w)
}

// NewFactory returns the factory for a real run: system streams and the
// given signal channel.
func NewFactory(signals <-chan os.Signal) *Factory {
	return &Factory{IOStreams: System(), Signals: signals}
}
