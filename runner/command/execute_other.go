//go:build !linux

package command

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"time"

	"github.com/pace-cli/pace/runner"
)

// spawner holds only the children's environment here: children start
// from any thread, through os/exec.
type spawner struct {
	once sync.Once
	env  []string // the children's environment, without JobEnv
}

func (*spawner) close() error { return nil }

// Execute runs job.Argv and waits for it. It returns a Result with the
// exit code or signal, the captured output, Sent (when the program had
// started), and Err set when the program could not be started.
func (e *Executor) Execute(ctx context.Context, job *runner.Job) *runner.Result {
	res := &runner.Result{
		Job:      *job,
		ExitCode: -1,
		Timeout:  e.Timeout,
		Stdout:   runner.NewCapture(e.SpillLimit, e.TempDir),
		Stderr:   runner.NewCapture(e.SpillLimit, e.TempDir),
	}
	grace := e.grace()
	jctx := ctx
	if e.Timeout > 0 {
		var end func()
		jctx, end = e.timeouts.start(ctx, e.Timeout)
		defer end()
	}
	c := exec.CommandContext(jctx, job.Argv[0], job.Argv[1:]...)
	c.Stdin = nil // the null device
	c.Stdout, c.Stderr = res.Stdout, res.Stderr
	e.sp.once.Do(func() { e.sp.env = withoutJobEnv((&exec.Cmd{Env: e.Env, Dir: e.Dir}).Environ()) })
	e.groups.reaper.start(e.ReaperPath, e.Reaper, e.groups.run())
	n, mark := e.groups.starting()
	c.Env, c.Dir = jobEnviron(e.sp.env, mark), e.Dir
	c.WaitDelay = grace
	c.SysProcAttr = procAttr()
	if e.Inherit != nil {
		c.ExtraFiles = e.Inherit(job.Admission)
	}
	c.Cancel = func() error {
		hard := errors.Is(context.Cause(jctx), runner.ErrKillNow)
		return signalGroup(c.Process, hard)
	}
	err := c.Start()
	if err == nil {
		res.Sent = time.Now()
		if e.started != nil {
			e.started()
		}
		e.groups.add(c.Process.Pid, n)
		err = c.Wait()
		e.groups.remove(c.Process.Pid, n)
	} else {
		e.groups.failed(n)
	}
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
	case c.ProcessState == nil && errors.Is(context.Cause(jctx), errTimeout):
		res.TimedOut = true // its time was up before it could start
	case c.ProcessState == nil:
		res.Err = startError(job, err)
	default:
		res.Err = fmt.Errorf("job %d: %w", job.Seq, err)
	}
	e.outputErr(res)
	return res
}
