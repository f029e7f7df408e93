//go:build !linux

package foreground

import "os/exec"

// dieWithPace does nothing where the kernel has no parent-death signal: a
// command outlives a pace killed with SIGKILL.
func dieWithPace(*exec.Cmd) {}
