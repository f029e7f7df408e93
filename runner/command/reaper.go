package command

import (
	"bufio"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// A job is killed with pace however pace dies (Pdeathsig, Linux), but
// what the job started is not: a script's commands, a pipeline's members,
// a subshell's loop run on after a pace killed outright (SIGKILL, the OOM
// killer), with no row in the job log, making calls that no rule counts
// and holding a --global-jobs slot they inherited. pace kills the process
// groups of its running jobs itself whenever it stops in any other way.
// For SIGKILL, a reaper does it: a process of its own (pace run starts
// `pace reaper`, see Executor.Reaper) that pace tells each running job's
// group on a pipe, and that kills the groups still running when the pipe
// ends, which is when pace is gone. A job that ended is told too: what it
// left in the background runs on, as when pace exits normally.

// reaper is the write end of the pipe to the reaper process, if one runs.
type reaper struct {
	once sync.Once
	w    *os.File    // nil: no reaper (none asked for, or it failed or died)
	p    *os.Process // the reaper
	buf  []byte
}

// tell sends the reaper one line: "+PGID" for a job's group that started,
// "-PGID" for one whose job ended. A reaper that cannot be told (it died)
// is dropped: the jobs run on without it. Requires groups.mu held (it
// orders the lines).
func (r *reaper) tell(op byte, pgid int) {
	if r.w == nil {
		return
	}
	r.buf = strconv.AppendInt(append(r.buf[:0], op), int64(pgid), 10)
	r.buf = append(r.buf, '\n')
	if _, err := r.w.Write(r.buf); err != nil {
		r.w.Close()
		r.w = nil
	}
}

// close ends the pipe, which tells the reaper to kill the groups left (none
// once every job has ended) and exit, and waits a moment for it.
func (r *reaper) close() {
	if r.w == nil {
		return
	}
	r.w.Close()
	r.w = nil
	done := make(chan struct{})
	go func() { r.p.Wait(); close(done) }()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C: // stopped by someone: it reaps when it runs again
	}
}

// Self returns how to run this program again with args, as
// Executor.ReaperPath and Reaper: on Linux by the name /proc/self/exe, so
// that the reaper is not named as this program is from its start
// (`killall -9 pace` spares it), nor lost if the file was replaced since.
// It returns nil where the program cannot be found.
func Self(args ...string) (path string, argv []string) {
	path, err := os.Executable()
	if err != nil {
		return "", nil
	}
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		path = "/proc/self/exe"
	}
	return path, append([]string{os.Args[0]}, args...)
}

// RunReaper is the reaper's process: it ignores the signals that stop
// pace (it must outlive pace, and is not a job), takes a name that is not
// pace's where it can (Linux: `killall -9 pace` and `pkill -9 pace` then
// spare it), and Reaps in.
func RunReaper(in io.Reader) error {
	signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	os.WriteFile("/proc/self/comm", []byte("reaper"), 0)
	return Reap(in)
}

// Reap is the reaper's work (Executor.Reaper): it reads the lines pace
// writes on in, "+PGID" when a job's process group starts and "-PGID"
// when its job ends, and when in ends (pace exited, or died) sends
// SIGKILL to each group still running (Unix; elsewhere there are no
// groups, and it only reads). It returns once it has.
func Reap(in io.Reader) error { return reap(in, killPgid) }

// reap is Reap with the kill of a group: never of 0 (the reaper's own
// group) or of 1 and below (kill(-1) is every process the user has).
func reap(in io.Reader, kill func(pgid int)) error {
	running := map[int]int{} // a count each: a pid may be reused while counted
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			running[pgid]++
		case '-':
			if running[pgid]--; running[pgid] <= 0 {
				delete(running, pgid)
			}
		}
	}
	for pgid := range running {
		kill(pgid)
	}
	return sc.Err()
}
