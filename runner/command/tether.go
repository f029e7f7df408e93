package command

import "os"

// Tether ties to a reaper one command that its caller runs itself, as a
// shell runs it, in the caller's own process group (pace exec's command,
// pace proxy's -- CMD), the way an Executor ties its jobs: the kernel
// kills the command with its caller (the caller's Pdeathsig), but not
// what the command started (a script's background jobs, a pipeline's
// members, what left for a group of its own), which ran on after a caller
// killed outright (SIGKILL), holding the slot the command inherited. The
// command has no group of its own to kill, so only its JobEnv entry finds
// what it started: a Tether starts a reaper only where that works
// (Linux, with pidfds), and is a no-op elsewhere.
//
// Use: NewTether before the command starts, its Environ as the command's
// environment, Close once the command has ended. What the command left
// in the background when it ended runs on, as a shell leaves it. A Tether
// is for one command, from one goroutine.
type Tether struct {
	r    reaper
	mark string // the command's JobEnv entry; "" without a reaper
}

// NewTether starts the reaper, argv run from path (as Executor.Reaper and
// ReaperPath; none if argv is empty), and tells it that the command is
// about to start.
func NewTether(path string, argv []string) *Tether {
	t := &Tether{}
	if len(argv) == 0 || sysProcs() == nil {
		return t
	}
	token := newToken()
	t.r.start(path, argv, token)
	t.r.mu.Lock()
	started := t.r.w != nil
	t.r.mu.Unlock()
	if !started {
		return t
	}
	t.mark = jobMark(token, 1)
	t.r.tell('+', 1, 0)
	return t
}

// Environ returns the command's environment: env (nil: this process's)
// with the command's JobEnv entry in place of any it held, in a new
// slice; env itself if no reaper runs.
func (t *Tether) Environ(env []string) []string {
	if t.mark == "" {
		return env
	}
	if env == nil {
		env = os.Environ()
	}
	return jobEnviron(withoutJobEnv(env), t.mark)
}

// Close tells the reaper that the command ended, and ends its pipe: the
// reaper exits, killing nothing. It does not wait for the reaper to
// exit: the few lines it was told fit in the pipe, and it reads them
// whenever it runs. If they did not (the reaper stopped and its pipe
// full, which three lines never fill), it is killed instead, lest it take
// the command for a running one and kill what the command left.
func (t *Tether) Close() {
	if t.mark == "" {
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
