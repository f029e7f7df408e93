package cmd

import (
	"syscall"
	"testing"
)

// TestSIGINTAsPID1: pace as the first process of a PID namespace (a
// container's entrypoint) cannot die of SIGINT: the kernel drops a signal
// that its init has no handler for, even one it sends itself, and Go's
// runtime then exits with status 2, pace's usage error. pace exits 130
// there, as the README's table says.
func TestSIGINTAsPID1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	quota := []string{"exec", "-v", "--key", "q", "--state", dir, "-r", "1/min", "--", "true"}
	if got, stderr := paceEnds(t, dir, "first", nil, quota...); got != "exit 0" {
		t.Fatalf("first call: %s: %s", got, stderr)
	}
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	got, stderr := paceEndsIn(t, dir, "pid1", attr, signalOnce(t, "waiting for", syscall.SIGINT), quota...)
	if got != "exit 130" {
		t.Errorf("pace as PID 1, SIGINT while waiting: %s, want exit 130; stderr:\n%s", got, stderr)
	}
}
