//go:build unix

package command

import (
	"errors"
	"os"
	"syscall"
)

// procAttr makes the child the leader of a new process group, so that a
// terminal's Ctrl-C reaches pace alone and a kill reaches everything the
// job started, and (on Linux) makes the kernel kill the child when pace
// dies (see deathSignal).
func procAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	deathSignal(a)
	return a
}

// signalGroup sends SIGTERM, or SIGKILL if hard, to p's process group. A
// group that is already gone is not an error.
func signalGroup(p *os.Process, hard bool) error {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	err := syscall.Kill(-p.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// signalPgid sends sig to the process group pgid; one already gone is no
// error.
func signalPgid(pgid int, sig os.Signal) {
	if s, ok := sig.(syscall.Signal); ok {
		_ = syscall.Kill(-pgid, s)
	}
}

// stopSignal reports whether sig stops a process, or continues one.
func stopSignal(sig os.Signal) (stop, cont bool) {
	return sig == syscall.SIGSTOP || sig == syscall.SIGTSTP, sig == syscall.SIGCONT
}

// exitSignal returns the number of the signal that killed the process, or 0.
func exitSignal(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return int(ws.Signal())
	}
	return 0
}

// resourceErr reports whether err, from starting a process, means that
// pace ran out of its own resources (file descriptors, processes,
// memory) rather than that the program cannot run.
func resourceErr(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.EAGAIN, syscall.ENOMEM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
