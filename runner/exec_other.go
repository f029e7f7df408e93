//go:build !unix

package runner

import (
	"os"
	"os/exec"
)

// setProcessGroup does nothing where process groups do not exist.
func setProcessGroup(*exec.Cmd) {}

// signalGroup kills p; without process groups its children survive it.
func signalGroup(p *os.Process, _ bool) error { return p.Kill() }

// exitSignal returns 0: there are no signals here.
func exitSignal(*os.ProcessState) int { return 0 }
