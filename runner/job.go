package runner

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrPermanent marks a failure that would happen again on every attempt,
// such as a command line that cannot be parsed or a program that does not
// exist. The pool never retries a result whose Err wraps it.
var ErrPermanent = errors.New("runner: permanent failure")

// permanentFailure is an error that wraps ErrPermanent without saying so
// in its message.
type permanentFailure struct {
	msg string
	err error
}

func (e *permanentFailure) Error() string {
	if e.msg == "" {
		return e.err.Error()
	}
	return e.msg
}

func (e *permanentFailure) Unwrap() error { return e.err }

func (e *permanentFailure) Is(target error) bool { return target == ErrPermanent }

// Permanent returns err marked as a permanent failure: errors.Is(.,
// ErrPermanent) holds, and the message is err's.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentFailure{err: err}
}

// ErrKillNow, as the cause of a context's cancellation (see
// context.WithCancelCause), asks executors to kill running jobs at once
// instead of terminating them gracefully.
var ErrKillNow = errors.New("runner: kill now")

// Item is one input item as read, or the error that reading it met (for
// instance an item longer than allowed). An item with an error becomes a
// failed job that never starts.
type Item struct {
	Text string
	Err  error
	// Skip marks an item that takes its Seq but does not run and has no
	// events, such as one that a resumed run finds done in its job log.
	Skip bool
}

// Job is one attempt at running an item.
type Job struct {
	// Seq numbers the item in input order, from 1.
	Seq int64
	// Item is the input item.
	Item string
	// Attempt counts attempts at this item, from 1.
	Attempt int
	// Slot is the job slot, 1..Options.Jobs, lowest free first. No two
	// jobs in flight share a slot.
	Slot int
	// Argv is what the job runs, set by Executor.Prepare. For commands it
	// is the argv; other executors put what identifies the call there.
	Argv []string
}

// CommandLine returns Argv as one line, each argument quoted for a POSIX
// shell where needed, so that the line can be pasted into one.
func (j *Job) CommandLine() string {
	var b strings.Builder
	for i, a := range j.Argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		q := Quote(a)
		if i == 0 && q == a && strings.Contains(a, "=") {
			q = "'" + a + "'" // NAME=value first would be an assignment
		}
		b.WriteString(q)
	}
	return b.String()
}

// Result is how one attempt ended. It carries what a job log row needs:
// the job (sequence number, attempt, command line), the admission instant,
// the runtime, the exit code and the signal.
type Result struct {
	Job Job
	// Start is the instant the limiter admitted the attempt, by the
	// pool's clock; zero if it was never admitted.
	Start time.Time
	// Waited is how long admission took (the rules and the in-flight cap).
	Waited time.Duration
	// Runtime is the time from admission to the end of the attempt.
	Runtime time.Duration
	// ExitCode is the process's exit code, or -1 when it did not exit
	// normally (killed by a signal, or never started).
	ExitCode int
	// Signal is the number of the signal that killed the process, or 0.
	Signal int
	// TimedOut is set when the attempt ran past its timeout and was killed.
	TimedOut bool
	// Timeout is the limit that TimedOut refers to.
	Timeout time.Duration
	// Err is set when the job could not run or its output could not be
	// kept: a command line that does not parse, a program not found.
	Err error
	// Stdout and Stderr hold the attempt's output; either may be nil. The
	// pool closes them once the result has been reported.
	Stdout, Stderr *Capture
	// HTTP is set by FetchExecutor: the response's status, size and any
	// pause it caused.
	HTTP *HTTPResult
}

// OK reports whether the attempt succeeded: it ran and exited with status 0.
func (r *Result) OK() bool {
	return r.Err == nil && r.ExitCode == 0 && r.Signal == 0 && !r.TimedOut
}

// Status describes how the attempt ended in a few words: "ok", "exit
// status 2", "timed out after 5s", "killed by SIGKILL", or the error.
func (r *Result) Status() string {
	switch {
	case r.Err != nil:
		return r.Err.Error()
	case r.TimedOut:
		return fmt.Sprintf("timed out after %v", r.Timeout)
	case r.Signal != 0:
		return "killed by " + SignalName(r.Signal)
	case r.ExitCode != 0:
		return fmt.Sprintf("exit status %d", r.ExitCode)
	}
	return "ok"
}

// Close removes the result's captured output, including temporary files.
func (r *Result) Close() error {
	return errors.Join(r.Stdout.Close(), r.Stderr.Close())
}

// signalNames names the signals whose numbers are the same on every unix.
var signalNames = map[int]string{
	1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
	8: "SIGFPE", 9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM",
}

// SignalName returns the conventional name of signal number n, such as
// "SIGKILL", or "signal n" for a number without a portable name.
func SignalName(n int) string {
	if s, ok := signalNames[n]; ok {
		return s
	}
	return fmt.Sprintf("signal %d", n)
}

// EventKind tells what an Event reports.
type EventKind int

const (
	// JobStarted: an attempt was admitted and is starting. Event.Job is set.
	JobStarted EventKind = iota + 1
	// JobFinished: an attempt ended. Event.Result is set, and Event.Retry
	// says whether another attempt at the item will follow.
	JobFinished
	// JobDone: an item's final result. Event.Result is set. With
	// KeepOrder these come in input order, else right after the final
	// JobFinished. Items that fail before they start (an Item with Err, a
	// Prepare error) have a JobDone without a JobStarted.
	JobDone
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case JobStarted:
		return "started"
	case JobFinished:
		return "finished"
	case JobDone:
		return "done"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is what the pool reports through Options.OnEvent.
type Event struct {
	Kind EventKind
	// Job is the attempt that started (JobStarted), else Result.Job.
	Job Job
	// Admitted is the admission instant (JobStarted).
	Admitted time.Time
	// Waited is how long admission took (JobStarted).
	Waited time.Duration
	// Result is set for JobFinished and JobDone. The callback may read
	// its output but must not keep it: the pool closes it afterwards.
	Result *Result
	// Retry is set on a JobFinished whose item will be tried again.
	Retry bool
	// InFlight is the number of attempts running after the event.
	InFlight int
}
