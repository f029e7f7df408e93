package jobctl

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"
)

// A child stopped on its way to exec is continued: children lists it.
func TestContinueChildren(t *testing.T) {
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Skip("no sleep:", err)
	}
	defer c.Wait()
	defer c.Process.Kill()
	if !slices.Contains(children(), c.Process.Pid) {
		t.Fatalf("children() = %v, want the child %d", children(), c.Process.Pid)
	}
	if err := syscall.Kill(c.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(c.Process.Pid, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() {
		t.Fatalf("the child did not stop: %v, %v", ws, err)
	}
	continueChildren()
	if _, err := syscall.Wait4(c.Process.Pid, &ws, syscall.WCONTINUED, nil); err != nil || !ws.Continued() {
		t.Errorf("the child was not continued: %v, %v", ws, err)
	}
}
