package jobctl

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// A child stopped on its way to exec is continued: both ways of listing
// children find it, and continueChildren continues it.
func TestContinueChildren(t *testing.T) {
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Skip("no sleep:", err)
	}
	defer c.Wait()
	defer c.Process.Kill()
	pid := c.Process.Pid
	if got := children(); !slices.Contains(got, pid) {
		t.Fatalf("children() = %v, want the child %d", got, pid)
	}
	if got := ChildrenOf(os.Getpid()); !slices.Contains(got, pid) {
		t.Fatalf("ChildrenOf(self) = %v, want the child %d", got, pid)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() {
		t.Fatalf("the child did not stop: %v, %v", ws, err)
	}
	continueChildren()
	// Polled, so that a child never continued fails the test, not hangs it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if p, err := syscall.Wait4(pid, &ws, syscall.WCONTINUED|syscall.WNOHANG, nil); err == nil && p == pid && ws.Continued() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the child was not continued")
		}
	}
}
