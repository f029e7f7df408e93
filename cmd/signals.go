package cmd

import (
	"os"
	"syscall"
)

// signalExitCode returns the exit code for a run stopped by sig.
func signalExitCode(sig os.Signal) int {
	if sig == syscall.SIGTERM {
		return ExitTerminated
	}
	return ExitInterrupted
}
