package cmd

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/pace-cli/pace/internal/osfiles"
)

// checkStdio refuses to run with stdout closed (pace ... >&-): job output
// would vanish, and a job printing nothing would not even tell. A
// descriptor closed when pace started is the null device reopened
// read-write (osfiles.ReopenedNull), which is also what Python's
// subprocess.DEVNULL gives: the message says how to discard output
// either way.
func checkStdio() (code int, ok bool) {
	if osfiles.ReopenedNull(1) {
		fmt.Fprintln(os.Stderr, "pace: stdout is closed, or is /dev/null opened read-write (as Python's subprocess.DEVNULL opens it), "+
			"which pace cannot tell apart; to discard job output, open /dev/null write-only (> /dev/null; in Python, stdout=open(os.devnull, \"w\"))")
		return ExitUsage, false
	}
	return 0, true
}

// printFailed reports err, an error writing what cobra prints on stdout,
// and returns the exit code: ExitBrokenPipe, without a word, when its
// reader is gone (pace --help | head -1), as for a program that SIGPIPE
// kills; else ExitFailed.
func printFailed(ios *IOStreams, err error) int {
	if errors.Is(err, syscall.EPIPE) {
		return ExitBrokenPipe
	}
	ios.sayf("cannot write to stdout: %v", err)
	return ExitFailed
}
