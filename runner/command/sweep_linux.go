package command

import (
	"bytes"
	"os"
	"strconv"
	"strings"
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

// pfKthread is the flag of a kernel thread in /proc/PID/stat's flags
// (PF_KTHREAD).
const pfKthread = 0x00200000

// execing reads /proc/PID/stat and /proc/PID/cmdline: a process that is
// neither a zombie nor a kernel thread, and whose command line reads as
// empty, is between its new program's memory and its arguments
// (create_elf_tables), or leaving (its memory released, not yet a
// zombie). Only a process whose environment read as empty is asked
// about: a few, as kernel threads and zombies are, and they are told
// apart here with one more read each.
func (*procfs) execing(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 7 || f[0] == "Z" || f[0] == "X" || f[0] == "x" {
		return false
	}
	if flags, err := strconv.ParseUint(f[6], 10, 64); err != nil || flags&pfKthread != 0 {
		return false
	}
	cmdline, err := os.ReadFile(dir + "/cmdline")
	return err == nil && len(cmdline) == 0
}

// execPause is pause's first wait; each round doubles it, so that
// sweepRounds of them come to about a second.
const execPause = time.Millisecond

func (*procfs) pause(round int) {
	time.Sleep(execPause << min(round, sweepRounds))
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
