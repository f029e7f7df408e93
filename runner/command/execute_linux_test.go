package command

import (
	"context"
	"testing"
	"time"
)

// Without pidfds (old kernels, sandboxes that forbid them) exits are
// awaited the old way, with the same results.
func TestExecuteWithoutPidfd(t *testing.T) {
	if !pidfdWorks() {
		t.Skip("this kernel has no pidfds: every test already runs without")
	}
	saved := pidfdWorks
	pidfdWorks = func() bool { return false }
	defer func() { pidfdWorks = saved }()

	e, job := helperArgv(t, "exit", "3")
	res := e.Execute(context.Background(), job)
	defer res.Close()
	if res.ExitCode != 3 || res.Err != nil || string(res.Stdout.Bytes()) != "about to exit" {
		t.Errorf("exit 3: got exit %d, err %v, stdout %q", res.ExitCode, res.Err, res.Stdout.Bytes())
	}

	pidFile := t.TempDir() + "/gc"
	e, job = helperArgv(t, "hang", pidFile)
	e.Timeout, e.KillGrace = 1500*time.Millisecond, 200*time.Millisecond
	res = e.Execute(context.Background(), job)
	res.Close()
	if !res.TimedOut || res.Signal == 0 {
		t.Errorf("got %s, want a timeout and a signal", res.Status())
	}
	if !waitGone(t, pidFile) {
		t.Error("grandchild survived the timeout")
	}
}
