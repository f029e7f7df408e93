package command

import (
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// procfs is the processes as /proc shows them, killed through pidfds.
type procfs struct {
	killed []int // the pidfds of the processes killed since the last wait
}

// sysProcs returns the processes the reaper looks through for JobEnv
// entries: /proc's, if this kernel gives pidfds (Linux 5.3 and later),
// without which a kill could reach a process that took the pid of one
// that ended after its environment was read; else nil.
func sysProcs() procs {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return nil
	}
	unix.Close(fd)
	return &procfs{}
}

func (*procfs) list() []int {
	f, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	pids := make([]int, 0, len(names))
	self := os.Getpid()
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil && pid > 1 && pid != self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// environ reads /proc/PID/environ: the environment the process was
// started with, as it is in its memory (a process that sets a variable
// does not change it; one that overwrites it, to set its title, does). It
// reads as empty for a zombie, and cannot be read for another user's
// process.
func (*procfs) environ(pid int) []byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil
	}
	return b
}

// kill opens a pidfd for pid, reads its environment again, and sends
// SIGKILL through the pidfd if marked holds. The pidfd is of the process
// that had pid when it was opened. If that process is still there when the
// signal is sent, the environment read was its own (no other can take pid
// before it is gone); if it is not, the signal fails.
func (p *procfs) kill(pid int, marked func([]byte) bool) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	if !marked(p.environ(pid)) || unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) != nil {
		unix.Close(fd)
		return false
	}
	p.killed = append(p.killed, fd)
	return true
}

// sweepWait bounds how long wait waits for the processes killed in one
// look to end (a process in an uninterruptible sleep takes its time).
const sweepWait = time.Second

// wait waits until each process killed has ended (a pidfd becomes
// readable then), or sweepWait has passed.
func (p *procfs) wait() {
	deadline := time.Now().Add(sweepWait)
	for _, fd := range p.killed {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			ms := max(time.Until(deadline).Milliseconds(), 0)
			if _, err := unix.Poll(fds, int(ms)); err != unix.EINTR {
				break
			}
		}
		unix.Close(fd)
	}
	p.killed = p.killed[:0]
}
