//go:build !unix

package termbar

import "os"

// NotifyResize does nothing where the system tells of no resizes.
func NotifyResize(chan<- os.Signal) {}

// InForeground is true where the system has no job control.
func InForeground(uintptr) bool { return true }
