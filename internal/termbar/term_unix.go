//go:build unix

package termbar

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// NotifyResize relays the terminal's resizes (SIGWINCH) to c, as
// signal.Notify relays signals; signal.Stop(c) ends it. Where the system
// tells of no resizes it does nothing.
func NotifyResize(c chan<- os.Signal) { signal.Notify(c, syscall.SIGWINCH) }

// InForeground reports whether this process's group is the foreground
// group of the terminal that fd is on: only then may a bar be drawn
// there, and not over the shell's prompt and what the user types (pace
// run ... &, or bg after Ctrl-Z). It is true where fd is not a terminal,
// or the system has no job control.
func InForeground(fd uintptr) bool {
	fg, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP)
	return err != nil || fg == unix.Getpgrp()
}
