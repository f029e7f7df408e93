//go:build !linux

package command

import "syscall"

// Elsewhere there is no Pdeathsig: a job outlives a pace killed with
// SIGKILL (a pace that is interrupted or terminated kills its jobs itself).

func deathSignal(*syscall.SysProcAttr) {}
