package cmd

import (
	"os"
	"syscall"

	"github.com/pace-cli/pace/internal/interrupt"
)

// stopSignals are the signals besides SIGINT and SIGTERM that stop a run
// (Factory.catchStops).
var stopSignals = []os.Signal{syscall.SIGHUP, syscall.SIGQUIT}

// signalExitCode returns the exit code for a run stopped by sig.
func signalExitCode(sig os.Signal) int {
	return signalNameExitCode(interrupt.Name(sig))
}

// signalNameExitCode returns the exit code for a run stopped by the
// signal named name (interrupt.Name): 128 + its number.
func signalNameExitCode(name string) int {
	switch name {
	case "SIGTERM":
		return ExitTerminated
	case "SIGHUP":
		return ExitHangup
	case "SIGQUIT":
		return ExitQuit
	}
	return ExitInterrupted
}
