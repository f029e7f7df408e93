//go:build !linux

package redistest

import "os/exec"

// setPdeathsig does nothing where the kernel has no parent-death signal.
func setPdeathsig(*exec.Cmd) {}

// startCmd starts cmd.
func startCmd(cmd *exec.Cmd) error { return cmd.Start() }
