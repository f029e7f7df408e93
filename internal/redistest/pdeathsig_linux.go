package redistest

import (
	"os/exec"
	"syscall"
)

// setPdeathsig makes the kernel kill the server if the test process dies
// without cleaning up.
func setPdeathsig(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
