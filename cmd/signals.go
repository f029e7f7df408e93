package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/pace-cli/pace/runner"
)

// errGraceOver is the cause of the job context's cancellation when the
// grace period after an interrupt ends.
var errGraceOver = errors.New("grace period over")

// interrupts turns SIGINT and SIGTERM into pace's two-stage stop: the
// first signal stops admissions and starts the grace period; the second
// signal, or the end of the grace period, kills the running jobs. Before
// the run starts (while the backend checks its rules, say) the first
// signal cancels the setup instead. It is safe for concurrent use.
type interrupts struct {
	signals <-chan os.Signal
	grace   time.Duration
	out     io.Writer // where the messages go
	// noun names what runs ("job" when empty), and stopping what the
	// first signal does ("starting no more jobs" when empty).
	noun, stopping string

	mu      sync.Mutex
	first   os.Signal
	running func() int  // jobs running now, for the messages
	stop    func()      // stop admitting (or cancel the setup)
	kill    func(error) // cancel the jobs with a cause
	done    chan struct{}
	exited  chan struct{}
	armed   bool // the run has started: signals stop and kill it
}

// watch starts handling signals until close is called. Before arm, a
// signal calls setup.
func (in *interrupts) watch(setup func()) {
	in.done, in.exited = make(chan struct{}), make(chan struct{})
	in.stop, in.kill, in.running = setup, func(error) {}, func() int { return 0 }
	go in.loop()
}

// arm switches from the setup to the run: the first signal calls stop,
// the second (or the end of the grace period) kill.
func (in *interrupts) arm(running func() int, stop func(), kill func(error)) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.running, in.stop, in.kill = running, stop, kill
	in.armed = true
}

// close stops handling signals and waits for the handler to return.
func (in *interrupts) close() {
	close(in.done)
	<-in.exited
}

func (in *interrupts) loop() {
	defer close(in.exited)
	var grace <-chan time.Time
	for {
		select {
		case sig := <-in.signals:
			in.mu.Lock()
			first, stop, kill, running, armed := in.first, in.stop, in.kill, in.running, in.armed
			if first == nil {
				in.first = sig
			}
			in.mu.Unlock()
			if !armed {
				// The setup: cancel it and say nothing here; the
				// session says that nothing ran.
				if first == nil {
					stop()
				}
				continue
			}
			if first != nil {
				n := running()
				fmt.Fprintf(in.out, "pace: %s again: killing %d running %s\n", signalName(sig), n, plural(n, in.what()))
				kill(runner.ErrKillNow)
				continue
			}
			stop()
			timer := time.NewTimer(in.grace)
			defer timer.Stop()
			grace = timer.C
			stopping := in.stopping
			if stopping == "" {
				stopping = "starting no more jobs"
			}
			if n := running(); n > 0 {
				fmt.Fprintf(in.out, "pace: %s: %s; waiting up to %v for %d running (interrupt again to kill them)\n",
					signalName(sig), stopping, in.grace, n)
			} else {
				fmt.Fprintf(in.out, "pace: %s: %s\n", signalName(sig), stopping)
			}
		case <-grace:
			grace = nil
			in.mu.Lock()
			kill, running := in.kill, in.running
			in.mu.Unlock()
			if n := running(); n > 0 {
				fmt.Fprintf(in.out, "pace: grace period of %v over: stopping %d running %s\n", in.grace, n, plural(n, in.what()))
			}
			kill(errGraceOver)
		case <-in.done:
			return
		}
	}
}

// what is the noun for what runs.
func (in *interrupts) what() string {
	if in.noun == "" {
		return "job"
	}
	return in.noun
}

// signal returns the first signal, if one came.
func (in *interrupts) signal() os.Signal {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.first
}

// signalExitCode returns the exit code for a run stopped by sig.
func signalExitCode(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return ExitTerminated
	}
	return ExitInterrupted
}

// signalName names a signal as the summary shows it.
func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// untilSignal runs work, which may block reading an input on which nothing
// ever comes (an idle pipe, a terminal nobody types on), and returns its
// result. A signal on sigs ends the wait at once and is returned instead:
// the caller stops with the signal's exit code, never with a verdict on
// part of its input. work is then left behind, blocked in a read that
// cannot be interrupted; the process is about to exit. A nil sigs waits
// for work alone.
func untilSignal[T any](sigs <-chan os.Signal, work func() T) (T, os.Signal) {
	done := make(chan T, 1)
	go func() { done <- work() }()
	select {
	case v := <-done:
		return v, nil
	case sig := <-sigs:
		var zero T
		return zero, sig
	}
}

// watchInterrupt returns a context that the first signal on signals
// cancels, for the setup before the real work starts (opening a backend,
// waiting for an admission): an interrupt then stops pace. end stops
// watching and returns the signal that came, if one did; call it once.
func watchInterrupt(ctx context.Context, signals <-chan os.Signal) (context.Context, context.CancelFunc, func() os.Signal) {
	wctx, cancel := context.WithCancel(ctx)
	var sig os.Signal
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case sig = <-signals:
			cancel()
		case <-stop:
		}
	}()
	end := func() os.Signal {
		close(stop)
		<-watched
		return sig
	}
	return wctx, cancel, end
}
