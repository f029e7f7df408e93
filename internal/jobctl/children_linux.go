package jobctl

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// continueChildren sends SIGCONT to every child of this process. A job
// being started when the terminal's SIGTSTP came was still in pace's
// process group, and stops on its way to exec (the signal pending until
// the child restores its signal mask, by then in a group of its own,
// which pace does not know of yet); until it is continued, the fork waits
// for it, pace cannot stop, and every later start waits too: the run
// hangs.
func continueChildren() {
	for _, pid := range children() {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
}

// children returns the pids of this process's children, from each
// thread's /proc/self/task/TID/children; where the kernel has no such
// file, from every process's /proc/PID/stat (ChildrenOf).
func children() []int {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	if len(tasks) == 0 {
		return ChildrenOf(os.Getpid())
	}
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// ChildrenOf returns the pids of the processes whose parent is ppid, from
// every process's /proc/PID/stat.
func ChildrenOf(ppid int) []int {
	var pids []int
	parent := strconv.Itoa(ppid)
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == parent {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(s))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
