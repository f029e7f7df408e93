package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// DefaultKillGrace is how long a job that ran past its timeout has between
// SIGTERM and SIGKILL.
const DefaultKillGrace = 2 * time.Second

// errTimeout is the cause of a job context that ran past its timeout.
var errTimeout = errors.New("runner: job timed out")

// Builder turns a job into the argv that runs it.
type Builder interface {
	Build(job *Job) ([]string, error)
}

// LineBuilder treats each item as a command line; see ParseLine.
type LineBuilder struct {
	// Shell runs every line under "sh -c", not only those that use shell
	// syntax.
	Shell bool
}

// Build returns the argv for job's item, or an error wrapping ErrBadLine.
func (b LineBuilder) Build(job *Job) ([]string, error) {
	return ParseLine(job.Item, b.Shell)
}

// CommandExecutor runs each job as a child process. The child runs in its
// own process group, so that a terminal's Ctrl-C reaches pace alone and a
// timeout or kill reaches everything the job started; its stdin is the
// null device; its stdout and stderr are captured whole (see Capture).
//
// On a job's timeout the process group gets SIGTERM, then SIGKILL after
// KillGrace. When the context passed to Execute is cancelled, the same
// happens, unless the cancellation's cause wraps ErrKillNow: then the
// group gets SIGKILL at once.
//
// The zero value is not usable: Builder is required. A CommandExecutor is
// safe for concurrent use.
type CommandExecutor struct {
	// Builder makes each job's argv.
	Builder Builder
	// Timeout limits each attempt's runtime; 0 means none.
	Timeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL; 0 means
	// DefaultKillGrace. It also bounds how long a finished job's
	// background children may hold its output open.
	KillGrace time.Duration
	// SpillLimit is how much of each output stream stays in memory; 0
	// means DefaultSpillLimit.
	SpillLimit int64
	// TempDir holds spilled output; empty means os.TempDir().
	TempDir string
	// Env, if not nil, is the children's environment; nil means pace's.
	Env []string
	// Dir, if not empty, is the children's working directory.
	Dir string
}

// Prepare sets job.Argv. Its errors (an unparseable line) mean the job
// cannot run at all.
func (e *CommandExecutor) Prepare(job *Job) error {
	argv, err := e.Builder.Build(job)
	if err != nil {
		return fmt.Errorf("job %d: %w", job.Seq, err)
	}
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Errorf("job %d: %w: empty command", job.Seq, ErrBadLine)
	}
	job.Argv = argv
	return nil
}

// Execute runs job.Argv and waits for it. It returns a Result with the
// exit code or signal, the captured output, and Err set when the program
// could not be started.
func (e *CommandExecutor) Execute(ctx context.Context, job *Job) *Result {
	res := &Result{
		Job:      *job,
		ExitCode: -1,
		Timeout:  e.Timeout,
		Stdout:   NewCapture(e.SpillLimit, e.TempDir),
		Stderr:   NewCapture(e.SpillLimit, e.TempDir),
	}
	grace := e.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	jctx := ctx
	if e.Timeout > 0 {
		var cancel context.CancelFunc
		jctx, cancel = context.WithTimeoutCause(ctx, e.Timeout, errTimeout)
		defer cancel()
	}
	c := exec.CommandContext(jctx, job.Argv[0], job.Argv[1:]...)
	c.Stdin = nil // the null device
	c.Stdout, c.Stderr = res.Stdout, res.Stderr
	c.Env, c.Dir = e.Env, e.Dir
	c.WaitDelay = grace
	setProcessGroup(c)
	c.Cancel = func() error {
		hard := errors.Is(context.Cause(jctx), ErrKillNow)
		return signalGroup(c.Process, hard)
	}
	err := c.Run()
	if jctx.Err() != nil && c.Process != nil {
		// Whatever survived the grace period in the job's group goes now.
		signalGroup(c.Process, true)
	}
	res.TimedOut = errors.Is(context.Cause(jctx), errTimeout)
	if c.ProcessState != nil {
		res.ExitCode = c.ProcessState.ExitCode()
		res.Signal = exitSignal(c.ProcessState)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil, errors.As(err, &exitErr), errors.Is(err, exec.ErrWaitDelay):
		// The exit status says it all; ErrWaitDelay only means a
		// background child held the output open past the grace period.
	case c.ProcessState == nil:
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			err = Permanent(err)
		}
		res.Err = fmt.Errorf("job %d: start %s: %w", job.Seq, job.Argv[0], err)
	default:
		res.Err = fmt.Errorf("job %d: %w", job.Seq, err)
	}
	if res.Err == nil {
		if cerr := errors.Join(res.Stdout.Err(), res.Stderr.Err()); cerr != nil {
			res.Err = fmt.Errorf("job %d: output: %w", job.Seq, cerr)
		}
	}
	return res
}
