package redistest

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// setPdeathsig makes the kernel kill the server if the test process dies
// without cleaning up.
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// The parent-death signal fires when the thread that forked the child
// ends, not the process. A thread ends when a goroutine locked to it
// returns (pace's own command starter does that), so every server is
// started from one goroutine locked to its thread for good.
var (
	starterOnce sync.Once
	starts      chan func()
)

// startCmd runs cmd.Start on the starter thread.
func startCmd(cmd *exec.Cmd) error {
	starterOnce.Do(func() {
		starts = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for f := range starts {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	starts <- func() { errc <- cmd.Start() }
	return <-errc
}
