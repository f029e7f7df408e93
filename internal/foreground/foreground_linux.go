package foreground

import (
	"os/exec"
	"syscall"
)

// dieWithPace makes the kernel kill c's process when pace dies, however
// pace dies (SIGKILL included), so that a command never runs on without
// the --global-jobs slot its pace held. The signal is tied to the thread
// that starts the child: the caller keeps its goroutine locked to its
// thread until the child has exited.
func dieWithPace(c *exec.Cmd) {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
