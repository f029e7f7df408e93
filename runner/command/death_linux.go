package command

import "syscall"

// On Linux the kernel sends a child SIGKILL when pace dies (Pdeathsig),
// however pace dies, SIGKILL included. The signal is tied to the thread
// that started the child, not to the process: see starter in
// execute_linux.go for how children are started from threads that outlive
// them.

// deathSignal asks the kernel to kill the child when its parent thread
// dies.
func deathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
