package cmd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pace-cli/pace/internal/jobctl"
)

// TestReaperSurvivesKillallPace: `killall -9 pace` (or `pkill -9 pace`)
// kills every process named pace at once. pace's reaper is not named so,
// from its start (exe, the name it is started by, then reaper), and kills
// what the killed pace's jobs started.
func TestReaperSurvivesKillallPace(t *testing.T) {
	dir := t.TempDir()
	c := exec.Command("pace", "run", "--", "sh", "-c", "sleep 60 & echo $! > bg; echo $$ > job.tmp; mv job.tmp job; wait", ":::", "1")
	c.Dir = dir
	c.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	waitFor(t, "the job to start", func() bool { _, err := os.Stat(filepath.Join(dir, "job")); return err == nil })
	bg, err := strconv.Atoi(strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, "bg"))))))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(bg, syscall.SIGKILL)
	// killall -9 pace: pace and each child of pace's named pace.
	named := map[string]int{}
	for _, pid := range jobctl.ChildrenOf(c.Process.Pid) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		name := strings.TrimSpace(string(b))
		named[name]++
		if name == "pace" {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	c.Process.Signal(syscall.SIGKILL)
	c.Wait()
	if named["pace"] != 0 || named["reaper"]+named["exe"] != 1 {
		t.Errorf("pace's children are named %v, want a reaper (exe until it names itself) and none named pace", named)
	}
	waitFor(t, "the job's background child to die with pace", func() bool { return !running(bg) })
}

// TestRunWithReaperStopped: pace run whose reaper is stopped (SIGSTOP, a
// debugger, a frozen cgroup) runs more jobs than the pipe to the reaper
// holds lines for (a page here, some 190 jobs' starts, groups and ends), and
// exits.
func TestRunWithReaperStopped(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mkfifo(filepath.Join(dir, "gate"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "-j", "1", "--", "sh", "-c", `if [ "$0" = 1 ]; then read x < gate; fi`, "{}", ":::"}
	for i := 1; i <= 600; i++ {
		args = append(args, strconv.Itoa(i))
	}
	c := exec.Command("pace", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	reaper := 0
	waitFor(t, "pace's reaper to start", func() bool {
		for _, pid := range jobctl.ChildrenOf(c.Process.Pid) {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(b)) == "reaper" {
				reaper = pid
			}
		}
		return reaper != 0
	})
	pidfd, err := unix.PidfdOpen(reaper, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	defer unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
	if err := unix.PidfdSendSignal(pidfd, unix.SIGSTOP, nil, 0); err != nil {
		t.Fatal(err)
	}
	// The pipe, by its read end: a page, and kept to be measured after.
	pipe, err := unix.Open(fmt.Sprintf("/proc/%d/fd/0", reaper), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pipe)
	if _, err := unix.FcntlInt(uintptr(pipe), unix.F_SETPIPE_SZ, 4096); err != nil {
		t.Fatal(err)
	}
	gate, err := os.OpenFile(filepath.Join(dir, "gate"), os.O_WRONLY, 0) // the first job reads it
	if err != nil {
		t.Fatal(err)
	}
	gate.WriteString("go\n")
	gate.Close()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("pace run with its reaper stopped: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("pace run hung with its reaper stopped")
	}
	// TIOCINQ is FIONREAD: the bytes the pipe holds.
	if n, err := unix.IoctlGetInt(pipe, unix.TIOCINQ); err != nil || n < 4096-32 {
		t.Errorf("the pipe to the reaper holds %d bytes (%v), want it full (4096)", n, err)
	}
}

// running reports whether pid is a process that has not exited (a zombie
// has).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
