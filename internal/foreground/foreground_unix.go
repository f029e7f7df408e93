//go:build unix

package foreground

import (
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// exitStatus returns a finished command's exit status as a shell gives
// it: its exit code, or 128 + the signal that killed it, and that signal.
func exitStatus(ps *os.ProcessState) (int, os.Signal) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal()
	}
	return ps.ExitCode(), nil
}

// Die makes pace die of sig, by its default action, when sig is SIGINT:
// what a shell expects of a program that Ctrl-C stopped. A shell that
// gets SIGINT while it waits for a command goes on with its script only if
// the command exited (it took the signal as handled): a loop of pace exec
// went on to its next call at each Ctrl-C, where a loop of the commands
// themselves stops. Die returns if pace lives on (sig is another signal,
// or it was not killed in a second): the caller then exits with its code.
// The caller has no signal.Notify left for sig that it needs, and SIGINT
// was not ignored when pace started (pace's Notify undid that; a shell
// that ignored it wants no death by it). Nor does pace die as the first
// process of a PID namespace (a container's entrypoint): the kernel drops
// a signal that a namespace's init has no handler for, even one it sends
// itself, and Go's runtime, finding itself alive, would exit with status
// 2, pace's usage error; it exits with its code instead.
func Die(sig os.Signal) {
	if sig != os.Interrupt || os.Getpid() == 1 {
		return
	}
	signal.Reset(sig)
	if syscall.Kill(os.Getpid(), syscall.SIGINT) == nil {
		time.Sleep(time.Second)
	}
}

// forwardedSignals are the signals pace exec catches only to send them
// on to its command: those a shell leaves to the command it runs. (SIGINT
// and SIGTERM come through the Factory.)
var forwardedSignals = []os.Signal{syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}

// notifyForwarded makes the signals of forwardedSignals arrive on c
// instead of taking their default action on pace. One that is ignored
// (SIGHUP under nohup) stays ignored, for pace and the command it passes
// the disposition on to: caught, it would no longer be.
func notifyForwarded(c chan<- os.Signal) {
	for _, s := range forwardedSignals {
		if !signal.Ignored(s) {
			signal.Notify(c, s)
		}
	}
}

// forwardSignal sends sig, which pace received, to the command p. The
// signals a terminal sends to its whole foreground process group (SIGINT
// from Ctrl-C, SIGQUIT from Ctrl-\, SIGWINCH at a resize) are not sent
// while pace is in the foreground: the command, in pace's process group,
// has had them already, and a second SIGINT would make many programs skip
// their cleanup.
func forwardSignal(p *os.Process, sig os.Signal) {
	switch sig {
	case os.Interrupt, syscall.SIGQUIT, syscall.SIGWINCH:
		if inForeground() {
			return
		}
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
