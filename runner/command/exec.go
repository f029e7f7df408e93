// Package command runs pace's jobs as child processes: one per item, each
// in its own process group, with stdin from the null device and output
// captured whole, so that the caller can print each job's output in one
// piece. It also turns command lines into argv (ParseLine) for pace's
// line mode.
package command

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pace-cli/pace/internal/foreground"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// defaultKillGrace is how long a job that ran past its timeout has between
// SIGTERM and SIGKILL.
const defaultKillGrace = 2 * time.Second

// errTimeout is the cause of a job context that ran past its timeout.
var errTimeout = errors.New("job timed out")

// Builder turns a job into the argv that runs it.
type Builder interface {
	Build(job *runner.Job) ([]string, error)
}

// Lines treats each item as a command line; see ParseLine.
type Lines struct {
	// Shell runs every line under "sh -c", not only those that use shell
	// syntax.
	Shell bool
}

// Build returns the argv for job's item, or an error wrapping ErrBadLine.
func (b Lines) Build(job *runner.Job) ([]string, error) {
	return parseLine(job.Item, b.Shell)
}

// Executor runs each job as a child process. The child runs in its own
// process group, so that a terminal's Ctrl-C reaches pace alone and a
// timeout or kill reaches everything the job started; its stdin is the
// null device; its stdout and stderr are captured whole (see
// runner.Capture). On Linux the kernel kills the child if pace dies, even
// of SIGKILL; with a Reaper, what it started dies too (its process group).
//
// On a job's timeout the process group gets SIGTERM, then SIGKILL after
// KillGrace. When the context passed to Execute is cancelled, the same
// happens, unless the cancellation's cause wraps runner.ErrKillNow: then
// the group gets SIGKILL at once. On Linux a job so killed takes with it,
// once its group has had the final SIGKILL, the processes whose
// environment holds its JobEnv entry, as the reaper's (what left the
// group: setsid, a shell's job control); what a job that ended by itself
// left behind runs on.
//
// A program that cannot start because pace ran out of file descriptors or
// processes fails with an error wrapping runner.ErrNotStarted, which the
// pool tries again: it is not the job's failure.
//
// The zero value is not usable: Builder is required. An Executor is safe
// for concurrent use; Close it once every job has ended.
type Executor struct {
	// Builder makes each job's argv.
	Builder Builder
	// Timeout limits each attempt's runtime; 0 means none.
	Timeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL; 0 means
	// defaultKillGrace. It also bounds how long a finished job's
	// background children may hold its output open.
	KillGrace time.Duration
	// SpillLimit is how much of each output stream stays in memory; 0
	// means runner.DefaultSpillLimit.
	SpillLimit int64
	// TempDir holds spilled output; empty means os.TempDir().
	TempDir string
	// Env, if not nil, is the children's environment; nil means pace's.
	// Either way each child's has JobEnv set too, to a value of its own.
	Env []string
	// Dir, if not empty, is the children's working directory.
	Dir string
	// Inherit, if set, returns the files a job started under an
	// admission inherits as descriptors 3 and up (limiter.Inherited: the
	// file that holds its --global-jobs slot, so that the slot stays held
	// while anything the job started runs, even if pace is killed).
	Inherit func(throttle.Admission) []*os.File
	// SpareProcs raises the process's GOMAXPROCS by the number of threads
	// that start jobs, where it is no more than that (Linux): a start holds
	// a P until its child has exec'd, and a child stopped before its exec
	// (Ctrl-Z) could otherwise leave no P for the signal's handler that
	// continues it. pace run sets it; a program that handles SIGTSTP as
	// pace does (internal/jobctl) wants it too.
	SpareProcs bool
	// Reaper, if set, is the argv of a program that runs Reap (pace
	// run's: pace reaper), and ReaperPath its file (Reaper[0] if empty).
	// Started with the first job, it kills the process groups of the jobs
	// running when pace dies, of SIGKILL too, so that nothing a job
	// started outlives a pace killed outright (Unix), and on Linux the
	// processes that hold a running job's JobEnv value: what a job
	// started before pace could tell the reaper its group, and what left
	// the group. On Linux the jobs themselves die with pace anyway
	// (Pdeathsig); what they started does not, without a reaper.
	Reaper     []string
	ReaperPath string

	// started, if set, is called between a job's start and the reaper's
	// being told its group (tests: pace killed in that window).
	started func()

	sp       spawner  // what the platform's Execute keeps between jobs
	groups   groups   // the running jobs' process groups
	timeouts timeouts // the running jobs' timers
	sweeps   sweeps   // the looks for what the jobs pace kills left (Linux)
}

// groups is the set of the running jobs' process groups, by their
// leaders' pids: a count each, as a pid freed by one job's exit may be a
// new job's before the first has given it back. It also numbers the jobs'
// starts, and tells the reaper of each start and of its group.
type groups struct {
	mu     sync.Mutex
	m      map[int]int
	stop   os.Signal // the stop in force (SignalRunning), nil while running
	reaper reaper    // told of each start and group (Executor.Reaper)

	once   sync.Once
	token  string        // the executor's, in each JobEnv value
	starts atomic.Uint64 // the starts numbered so far
}

// run returns the executor's token, drawn on the first call.
func (g *groups) run() string {
	g.once.Do(func() { g.token = newToken() })
	return g.token
}

// starting numbers a start that is about to be made and tells the reaper
// so, before the fork: the job's program runs as soon as it has exec'd,
// before pace knows its group, and what it starts meanwhile is found by
// the returned mark, the job's JobEnv entry, if pace dies then. The start
// must then be told as made (add) or not (failed).
func (g *groups) starting() (n uint64, mark string) {
	n = g.starts.Add(1)
	g.reaper.tell('+', n, 0)
	return n, jobMark(g.run(), n)
}

// failed tells the reaper that start n was not made.
func (g *groups) failed(n uint64) { g.reaper.tell('-', n, 0) }

// add counts in the group of pid, start n's process; a job that started
// while the others are stopped gets their stop too (it was being started
// at Ctrl-Z).
func (g *groups) add(pid int, n uint64) {
	g.mu.Lock()
	if g.m == nil {
		g.m = map[int]int{}
	}
	g.m[pid]++
	g.reaper.tell('=', n, pid)
	if g.stop != nil {
		signalPgid(pid, g.stop)
	}
	g.mu.Unlock()
}

// remove counts out the group of pid, start n's process, which has ended.
func (g *groups) remove(pid int, n uint64) {
	g.mu.Lock()
	if g.m[pid]--; g.m[pid] <= 0 {
		delete(g.m, pid)
	}
	g.reaper.tell('-', n, 0)
	g.mu.Unlock()
}

// SignalRunning sends sig to the process group of every job running now,
// the background children it left included, until its output has closed
// (Unix; elsewhere it does nothing). pace stops and continues its jobs
// with itself on Ctrl-Z: each is a process group of its own, which the
// terminal's signal never reaches. A stop (SIGSTOP, SIGTSTP) also holds
// the jobs' timeouts, and stops the jobs that start until SIGCONT, which
// lets them all run on: a job's Timeout counts the time it could run.
func (e *Executor) SignalRunning(sig os.Signal) {
	stop, cont := stopSignal(sig)
	if stop {
		e.timeouts.hold()
	}
	e.groups.mu.Lock()
	switch {
	case stop:
		e.groups.stop = sig
	case cont:
		e.groups.stop = nil
	}
	for pid := range e.groups.m {
		signalPgid(pid, sig)
	}
	e.groups.mu.Unlock()
	if cont {
		e.timeouts.release()
	}
}

// Prepare sets job.Argv. Its errors (an unparseable line) mean the job
// cannot run at all.
func (e *Executor) Prepare(job *runner.Job) error {
	argv, err := e.Builder.Build(job)
	if err != nil {
		return fmt.Errorf("job %d: %w", job.Seq, err)
	}
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Errorf("job %d: %w: empty command", job.Seq, errBadLine)
	}
	if limit := maxArg(); limit > 0 {
		for i, a := range argv {
			if len(a) >= limit {
				return runner.Permanent(fmt.Errorf("job %d: argument %d of %s is %d bytes: the system takes at most %d in one argument",
					job.Seq, i, argv[0], len(a), limit-1))
			}
		}
	}
	job.Argv = argv
	return nil
}

// maxArg returns the length of one argument, with its NUL, past which
// execve refuses it (E2BIG): Linux's MAX_ARG_STRLEN, 32 pages; 0 where
// none is known.
func maxArg() int {
	if runtime.GOOS != "linux" {
		return 0
	}
	return 32 * os.Getpagesize()
}

// Close stops the threads children are started from and releases what
// the executor keeps between jobs, the reaper included (it exits, or is
// killed if it has not read within a second all it was told). Call it
// once every job has ended: on Linux a child whose starting thread ends is
// killed.
func (e *Executor) Close() error {
	e.groups.mu.Lock()
	e.groups.reaper.close()
	e.groups.mu.Unlock()
	return e.sp.close()
}

// grace returns the time between SIGTERM and SIGKILL.
func (e *Executor) grace() time.Duration {
	if e.KillGrace > 0 {
		return e.KillGrace
	}
	return defaultKillGrace
}

// outputErr sets res.Err, if nothing else went wrong, when output was
// lost. A stdout that could not be kept whole is dropped: its first part,
// written as if it were all, would be taken for the job's output.
func (e *Executor) outputErr(res *runner.Result) {
	serr := res.Stdout.Err()
	if res.Err == nil {
		if cerr := errors.Join(serr, res.Stderr.Err()); cerr != nil {
			res.Err = fmt.Errorf("job %d: output: %w", res.Job.Seq, cerr)
		}
	}
	if serr != nil {
		res.Stdout.Close()
		res.Stdout = nil
	}
}

// startError describes why job's program could not start: not found and
// not executable are permanent; pace's own lack of resources is no
// failure of the job (runner.ErrNotStarted).
func startError(job *runner.Job, err error) error {
	prog := job.Argv[0]
	switch {
	case resourceErr(err):
		return fmt.Errorf("job %d: start %s: %w: %w", job.Seq, prog, runner.ErrNotStarted, err)
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
		if why := foreground.MissingPart(err); why != "" {
			// The program is there: its #! interpreter, or its loader, is not.
			return runner.Permanent(fmt.Errorf("job %d: start %s: %s", job.Seq, prog, why))
		}
		return runner.Permanent(fmt.Errorf("job %d: start %s: not found", job.Seq, prog))
	case errors.Is(err, os.ErrPermission):
		if fi, serr := os.Stat(prog); serr == nil && !fi.IsDir() && fi.Mode()&0o111 == 0 {
			return runner.Permanent(fmt.Errorf("job %d: start %s: not executable (chmod +x it, or run it with its interpreter)", job.Seq, prog))
		}
		return runner.Permanent(fmt.Errorf("job %d: start %s: permission denied", job.Seq, prog))
	case errors.Is(err, exec.ErrDot):
		return runner.Permanent(fmt.Errorf("job %d: start %s: %w", job.Seq, prog, err))
	case errors.Is(err, syscall.ENOEXEC):
		return runner.Permanent(fmt.Errorf("job %d: start %s: not a program this system runs (a script needs a first line such as #!/bin/sh)", job.Seq, prog))
	case errors.Is(err, syscall.E2BIG):
		// As long again on a retry: no attempt can start.
		return runner.Permanent(fmt.Errorf("job %d: start %s: its arguments are too long for the system: %w", job.Seq, prog, err))
	}
	return fmt.Errorf("job %d: start %s: %w", job.Seq, prog, err)
}
