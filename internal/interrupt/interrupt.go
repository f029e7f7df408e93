// Package interrupt is pace's two-stage stop on SIGINT and SIGTERM: the
// first signal stops admissions and starts a grace period, the second (or
// the grace period's end) kills what runs. It also waits for work that may
// block on an input nobody writes to, giving up on a signal (Until; Unread
// passes on a signal that came with the work's result), and cancels a
// setup on the first signal (Context).
package interrupt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/runner"
)

// ErrGraceOver is the cause of the job context's cancellation when the
// grace period after an interrupt ends.
var ErrGraceOver = errors.New("grace period over")

// Handler turns SIGINT and SIGTERM (and SIGHUP, if it arrives) into
// pace's two-stage stop: the first signal stops admissions and starts the
// grace period; the second signal, or the end of the grace period, kills
// the running jobs. SIGQUIT (Ctrl-\) does both at once. Before the run
// starts (while the backend checks its rules, say) the first signal
// cancels the setup instead. Set the exported fields, then call Watch;
// Arm once the run starts; Close at the end. It is safe for concurrent
// use.
//
// The handler's messages are written by a goroutine of their own: a
// write to Out that blocks (a display busy with a stalled stdout, a
// terminal paused with Ctrl-S) holds up no stop, no kill and no later
// signal.
type Handler struct {
	Signals <-chan os.Signal
	Grace   time.Duration
	Out     io.Writer // where the messages go
	// Noun names what runs ("job" when empty), and Stopping what the
	// first signal does ("starting no more jobs" when empty).
	Noun, Stopping string

	mu      sync.Mutex
	first   os.Signal
	running func() int  // jobs running now, for the messages
	stop    func()      // stop admitting (or cancel the setup)
	kill    func(error) // cancel the jobs with a cause
	done    chan struct{}
	exited  chan struct{}
	armed   bool // the run has started: signals stop and kill it
	// pending is the first signal, if it came before Arm and Arm has not
	// passed it on to the run yet (replay).
	pending os.Signal
	replay  chan os.Signal
	said    []string      // messages not yet written to Out
	wake    chan struct{} // a message waits
	printed chan struct{} // the printer has returned
}

// Watch starts handling signals until Close is called. Before Arm, a
// signal calls setup.
func (h *Handler) Watch(setup func()) {
	h.done, h.exited = make(chan struct{}), make(chan struct{})
	h.wake, h.printed = make(chan struct{}, 1), make(chan struct{})
	h.replay = make(chan os.Signal, 1)
	h.stop, h.kill, h.running = setup, func(error) {}, func() int { return 0 }
	go h.loop()
	go h.print()
}

// Arm switches from the setup to the run: the first signal calls stop,
// the second (or the end of the grace period) kill, with
// runner.ErrKillNow or ErrGraceOver; running counts what runs, for the
// messages. A first signal that came before, during the setup, is the
// run's first too: a setup that finished all the same (it had nothing
// left to cancel) is followed by a run that stops at once. Before, that
// signal was lost, and the run went on until a second one.
func (h *Handler) Arm(running func() int, stop func(), kill func(error)) {
	h.mu.Lock()
	h.running, h.stop, h.kill = running, stop, kill
	h.armed = true
	pending := h.pending
	h.pending = nil
	h.mu.Unlock()
	if pending != nil {
		h.replay <- pending // the only one: pending is set once
	}
}

// Close stops handling signals and waits for the handler to return and
// its messages to be written.
func (h *Handler) Close() {
	close(h.done)
	<-h.exited
	<-h.printed
}

// say queues a message for Out; it never blocks.
func (h *Handler) say(format string, args ...any) {
	h.mu.Lock()
	h.said = append(h.said, fmt.Sprintf(format, args...))
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// print writes the messages, in order, until the loop has returned and
// every message is written.
func (h *Handler) print() {
	defer close(h.printed)
	for {
		select {
		case <-h.wake:
			h.flush()
		case <-h.exited:
			h.flush()
			return
		}
	}
}

// flush writes the messages queued so far.
func (h *Handler) flush() {
	for {
		h.mu.Lock()
		if len(h.said) == 0 {
			h.mu.Unlock()
			return
		}
		msg := h.said[0]
		h.said = h.said[1:]
		h.mu.Unlock()
		io.WriteString(h.Out, msg)
	}
}

func (h *Handler) loop() {
	defer close(h.exited)
	var grace <-chan time.Time
	for {
		select {
		case sig := <-h.Signals:
			h.mu.Lock()
			first, stop, kill, running, armed := h.first, h.stop, h.kill, h.running, h.armed
			if first == nil {
				h.first = sig
			}
			if !armed {
				// The setup: cancel it and say nothing here; the
				// caller says that nothing ran. Under the lock, so
				// that an Arm that comes meanwhile finds it pending
				// and passes it on to the run.
				if first == nil {
					h.pending = sig
					stop()
				}
				h.mu.Unlock()
				continue
			}
			h.mu.Unlock()
			if g := h.armedSignal(sig, first != nil, stop, kill, running); g != nil {
				grace = g
			}
		case sig := <-h.replay:
			h.mu.Lock()
			stop, kill, running := h.stop, h.kill, h.running
			h.mu.Unlock()
			if g := h.armedSignal(sig, false, stop, kill, running); g != nil {
				grace = g
			}
		case <-grace:
			grace = nil
			h.mu.Lock()
			kill, running := h.kill, h.running
			h.mu.Unlock()
			if n := running(); n > 0 {
				h.say("pace: grace period of %v over: stopping %d running %s\n", h.Grace, n, human.Plural(n, h.what()))
			}
			kill(ErrGraceOver)
		case <-h.done:
			return
		}
	}
}

// armedSignal acts on sig once the run has started: again (a signal came
// before) or SIGQUIT kills what runs, the first stops admissions and
// returns the grace period's timer.
func (h *Handler) armedSignal(sig os.Signal, again bool, stop func(), kill func(error), running func() int) <-chan time.Time {
	if again || sig == syscall.SIGQUIT {
		// Again, or Ctrl-\ (quit now): kill what runs.
		word := " again"
		if !again {
			stop()
			word = ""
		}
		n := running()
		h.say("pace: %s%s: killing %d running %s\n", Name(sig), word, n, human.Plural(n, h.what()))
		kill(runner.ErrKillNow)
		return nil
	}
	stop()
	stopping := h.Stopping
	if stopping == "" {
		stopping = "starting no more jobs"
	}
	if n := running(); n > 0 {
		h.say("pace: %s: %s; waiting up to %v for %d running (interrupt again to kill them)\n",
			Name(sig), stopping, h.Grace, n)
	} else {
		h.say("pace: %s: %s\n", Name(sig), stopping)
	}
	// A timer not stopped is collected once unreachable (Go 1.23).
	return time.NewTimer(h.Grace).C
}

// what is the noun for what runs.
func (h *Handler) what() string {
	if h.Noun == "" {
		return "job"
	}
	return h.Noun
}

// Signal returns the first signal, if one came.
func (h *Handler) Signal() os.Signal {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.first
}

// Name names a signal as the summary shows it: SIGINT, SIGTERM.
func Name(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return sig.String()
}

// Context returns a context that the first signal on signals cancels,
// for the setup before the real work starts (opening a backend, waiting
// for an admission): an interrupt then stops pace. end stops watching and
// returns the signal that came, if one did; call it once.
func Context(ctx context.Context, signals <-chan os.Signal) (context.Context, context.CancelFunc, func() os.Signal) {
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
