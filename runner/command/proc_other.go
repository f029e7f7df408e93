//go:build !unix

package command

import (
	"os"
	"syscall"
)

// procAttr asks for nothing where process groups do not exist: a job's
// children outlive a killed job, and the job outlives a killed pace.
func procAttr() *syscall.SysProcAttr { return nil }

// signalPgid does nothing: there are no process groups to stop.
func signalPgid(int, os.Signal) {}

// signalGroup kills p; without process groups its children survive it.
func signalGroup(p *os.Process, _ bool) error { return p.Kill() }

// exitSignal returns 0: there are no signals here.
func exitSignal(*os.ProcessState) int { return 0 }

// resourceErr reports whether err, from starting a process, means that
// pace ran out of its own resources; here nothing says so reliably.
func resourceErr(error) bool { return false }

// stopSignal reports nothing: no signal stops a process here.
func stopSignal(os.Signal) (stop, cont bool) { return false, false }
