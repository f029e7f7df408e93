//go:build unix

package termbar

import (
	"os"
	"os/signal"
	"syscall"
)

// NotifyResize relays the terminal's resizes (SIGWINCH) to c, as
// signal.Notify relays signals; signal.Stop(c) ends it. Where the system
// tells of no resizes it does nothing.
func NotifyResize(c chan<- os.Signal) { signal.Notify(c, syscall.SIGWINCH) }
