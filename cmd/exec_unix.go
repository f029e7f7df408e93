//go:build unix

package cmd

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// exitStatus returns a finished command's exit status as a shell gives
// it: its exit code, or 128 + the signal that killed it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// forwardSignal sends sig, which pace received, to the command p. A
// SIGINT is not sent while pace is in the foreground of a terminal: it
// came from Ctrl-C, which the terminal sent to the command too, as to
// every process of the foreground group, and a second one would make
// many programs skip their cleanup.
func forwardSignal(p *os.Process, sig os.Signal) {
	if sig == os.Interrupt && inForeground() {
		return
	}
	_ = p.Signal(sig)
}

// inForeground reports whether pace's process group is the foreground
// group of the terminal on its stdin, stdout or stderr.
func inForeground() bool {
	for _, fd := range []int{0, 1, 2} {
		if fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil {
			own, err := unix.Getpgid(0)
			return err == nil && fg == own
		}
	}
	return false
}
