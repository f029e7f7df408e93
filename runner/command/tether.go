package command

import (
	"os"
	"sync"
	"time"
)

// TetherDelay is how long a tied command runs before its reaper starts
// (NewTether). A reaper is a process: its start and its own start-up cost
// about what a short command's whole call does, and most commands that
// pace exec runs end sooner than this. What a command starts and leaves
// behind within its first TetherDelay is killed by the reaper as well,
// once that runs; only a pace killed outright within that time leaves it.
const TetherDelay = 50 * time.Millisecond

// Tether ties to a reaper one command that its caller runs itself, as a
// shell runs it, in the caller's own process group (pace exec's command,
// pace proxy's -- CMD), the way an Executor ties its jobs: the kernel
// kills the command with its caller (the caller's Pdeathsig), but not
// what the command started (a script's background jobs, a pipeline's
// members, what left for a group of its own), which ran on after a caller
// killed outright (SIGKILL), holding the slot the command inherited. The
// command has no group of its own to kill, so only its JobEnv entry finds
// what it started: a Tether ties only where that works (Linux, with
// pidfds), and is a no-op elsewhere.
//
// Use: NewTether before the command starts, its Environ as the command's
// environment, Close once the command has ended. What the command left
// in the background when it ended runs on, as a shell leaves it. Environ
// and Close are for the goroutine that runs the command.
type Tether struct {
	path  string
	argv  []string
	token string
	mark  string // the command's JobEnv entry; "" if nothing can find it

	mu      sync.Mutex
	timer   *time.Timer // starts the reaper after the delay; nil for after 0
	closed  bool
	started bool // the reaper runs and was told of the command
	r       reaper
}

// NewTether returns the tie of a command about to start, whose reaper
// (argv run from path, as Executor.Reaper and ReaperPath; none if argv is
// empty) starts once the command has run for after (TetherDelay for
// pace's commands), or at once if after is 0, and is told that the
// command runs.
func NewTether(path string, argv []string, after time.Duration) *Tether {
	t := &Tether{path: path, argv: argv}
	if len(argv) == 0 || sysProcs() == nil {
		return t
	}
	t.token = newToken()
	t.mark = jobMark(t.token, 1)
	if after <= 0 {
		t.start()
	} else {
		t.timer = time.AfterFunc(after, t.start)
	}
	return t
}

// start starts the reaper and tells it of the command, unless the
// command has ended.
func (t *Tether) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.r.start(t.path, t.argv, t.token)
	t.r.mu.Lock()
	ok := t.r.w != nil
	t.r.mu.Unlock()
	if ok {
		t.r.tell('+', 1, 0)
		t.started = true
	}
}

// Environ returns the command's environment: env (nil: this process's)
// with the command's JobEnv entry in place of any it held, in a new
// slice; env itself where nothing can find the command by it.
func (t *Tether) Environ(env []string) []string {
	if t.mark == "" {
		return env
	}
	if env == nil {
		env = os.Environ()
	}
	return jobEnviron(withoutJobEnv(env), t.mark)
}

// Close tells the reaper, if it started, that the command ended, and ends
// its pipe: the reaper exits, killing nothing; if it has not started, it
// never does. Close does not wait for the reaper to exit: the few lines it
// was told fit in the pipe, and it reads them whenever it runs. If they
// did not (the reaper stopped and its pipe full, which three lines never
// fill), it is killed instead, lest it take the command for a running one
// and kill what the command left.
func (t *Tether) Close() {
	t.mu.Lock()
	t.closed = true
	if t.timer != nil {
		t.timer.Stop()
	}
	started := t.started
	t.mu.Unlock()
	if !started {
		return
	}
	t.r.tell('-', 1, 0)
	t.r.mu.Lock()
	w, p, told := t.r.w, t.r.p, !t.r.flushing
	t.r.w = nil
	t.r.mu.Unlock()
	if w == nil {
		return
	}
	if !told {
		p.Kill()
	}
	w.Close()
	go p.Wait() // no zombie while the caller lives on
}
