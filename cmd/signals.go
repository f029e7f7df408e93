package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// errGraceOver is the cause of the job context's cancellation when the
// grace period after an interrupt ends.
var errGraceOver = errors.New("grace period over")

// interrupts turns SIGINT and SIGTERM into pace's two-stage stop: the
// first signal stops admissions and starts the grace period; the second
// signal, or the end of the grace period, kills the running jobs.
type interrupts struct {
	signals <-chan os.Signal
	clock   throttle.Clock
	grace   time.Duration
	out     io.Writer   // where the messages go
	running func() int  // jobs running now, for the messages
	stop    func()      // stop admitting
	kill    func(error) // cancel the jobs with a cause
	first   os.Signal   // the first signal; read it after watch returns
}

// watch handles signals until done is closed.
func (in *interrupts) watch(done <-chan struct{}) {
	var grace <-chan time.Time
	for {
		select {
		case sig := <-in.signals:
			if in.first != nil {
				fmt.Fprintf(in.out, "pace: %s again: killing %d running jobs\n", signalName(sig), in.running())
				in.kill(runner.ErrKillNow)
				continue
			}
			in.first = sig
			in.stop()
			timer := in.clock.NewTimer(in.grace)
			defer timer.Stop()
			grace = timer.C()
			fmt.Fprintf(in.out, "pace: %s: starting no more jobs; waiting up to %v for %d running (interrupt again to kill them)\n",
				signalName(sig), in.grace, in.running())
		case <-grace:
			grace = nil
			fmt.Fprintf(in.out, "pace: grace period of %v over: stopping %d running jobs\n", in.grace, in.running())
			in.kill(errGraceOver)
		case <-done:
			return
		}
	}
}

// exitCode returns the exit code for the first signal, and whether there
// was one.
func (in *interrupts) exitCode() (int, bool) {
	switch {
	case in.first == nil:
		return 0, false
	case in.first == syscall.SIGTERM:
		return ExitTerminated, true
	}
	return ExitInterrupted, true
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
