package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

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
