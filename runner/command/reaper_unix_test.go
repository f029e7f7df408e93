//go:build unix

package command

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// startGroup starts a process that sleeps in a process group of its own,
// as a job's is, and returns it.
func startGroup(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "60")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() {
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		c.Wait()
	})
	return c
}

// TestReap: when its input ends, Reap kills the groups still running (a
// job's, counted twice and ended once, is still running), and leaves
// those whose jobs ended (what they left in the background runs on, as
// when pace exits normally).
func TestReap(t *testing.T) {
	running, twice, ended := startGroup(t), startGroup(t), startGroup(t)
	// A token of its own: Reap kills the processes of jobs 1 and 2, by
	// their JobEnv entries, wherever they are.
	in := fmt.Sprintf("@%s\n+1\n=1 %d\n+2\n=2 %d\n+3\n=3 %d\n+4\n=4 %d\n-3\n-4\n",
		newToken(), running.Process.Pid, twice.Process.Pid, twice.Process.Pid, ended.Process.Pid)
	if err := Reap(strings.NewReader(in)); err != nil {
		t.Fatalf("Reap = %v", err)
	}
	for name, c := range map[string]*exec.Cmd{"running": running, "counted twice, ended once": twice} {
		err := c.Wait()
		if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("%s group: Wait = %v, want killed by SIGKILL", name, err)
		}
	}
	if err := syscall.Kill(ended.Process.Pid, 0); err != nil {
		t.Errorf("the ended job's group: %v, want it left running", err)
	}
}

// TestJobsChildrenDieWithPace: pace (a helper process running jobs with a
// reaper) killed with SIGKILL takes with it what its running jobs started
// in the background, not only the jobs (Pdeathsig, Linux): the reaper
// kills their process groups.
func TestJobsChildrenDieWithPace(t *testing.T) {
	parent, files := startParent(t, "reaper-parent")
	for i, f := range files {
		if !alive(t, f+".bg") {
			t.Fatalf("job %d's background child died while pace was alive", i)
		}
	}
	parent.Process.Kill()
	parent.Wait()
	for i, f := range files {
		if !waitGone(t, f) {
			t.Errorf("job %d outlived a pace killed with SIGKILL", i)
		}
		if !waitGone(t, f+".bg") {
			t.Errorf("job %d's background child outlived a pace killed with SIGKILL", i)
			if b, err := os.ReadFile(f + ".bg"); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	}
}
