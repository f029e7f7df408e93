package command

import (
	"runtime"
	"syscall"
)

// On Linux the kernel sends a child SIGKILL when pace dies (Pdeathsig),
// however pace dies, SIGKILL included. The signal is tied to the thread
// that started the child, not to the process: Go starts a child from
// whatever thread the calling goroutine runs on, and the runtime may end
// that thread while the child runs, which would kill the child early. So
// every child is started from one goroutine locked to its own thread for
// the executor's lifetime (see starter).

// deathSignal asks the kernel to kill the child when its parent thread
// dies.
func deathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// startsOnOwnThread says that children must be started by the starter.
const startsOnOwnThread = true

// lockThread locks the calling goroutine to its thread for good: the
// starter's goroutine never unlocks, so its thread ends only when the
// goroutine returns, after every child it started has been waited for.
func lockThread() { runtime.LockOSThread() }
