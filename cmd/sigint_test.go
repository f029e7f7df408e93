//go:build unix

package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pace's process, run with args, signalled by signal (if not nil) once
// started: how it ended, and its stderr.
func paceEnds(t *testing.T, dir, name string, signal func(pid int, stderr func() string), args ...string) (string, string) {
	t.Helper()
	return paceEndsIn(t, dir, name, nil, signal, args...)
}

// paceEndsIn is paceEnds with pace started with attr (nil: none).
func paceEndsIn(t *testing.T, dir, name string, attr *syscall.SysProcAttr, signal func(pid int, stderr func() string), args ...string) (string, string) {
	t.Helper()
	errPath := filepath.Join(dir, name+".stderr")
	stderr, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	c := exec.Command("pace", args...)
	c.Stderr = stderr
	c.Env = append(os.Environ(), redisURLEnv+"=", "GORACE=atexit_sleep_ms=0")
	c.SysProcAttr = attr
	if err := c.Start(); err != nil {
		if attr != nil {
			t.Skipf("%s: cannot start pace so: %v", name, err)
		}
		t.Fatal(err)
	}
	read := func() string { b, _ := os.ReadFile(errPath); return string(b) }
	if signal != nil {
		signal(c.Process.Pid, read)
	}
	return waitEnd(t, c, name), read()
}

// waitEnd waits for c, a pace started, for 30 s at most, and says how it
// ended: "exit N" or "killed by SIGNAL".
func waitEnd(t *testing.T, c *exec.Cmd, name string) string {
	t.Helper()
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		c.Process.Kill()
		<-done
		t.Fatalf("%s: pace did not end", name)
	}
	ws := c.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return "exit " + strconv.Itoa(ws.ExitStatus())
}

// signalOnce returns a signal function for paceEnds that sends sig once
// stderr holds text.
func signalOnce(t *testing.T, text string, sig syscall.Signal) func(int, func() string) {
	return func(pid int, stderr func() string) {
		waitFor(t, "pace's stderr to say "+text, func() bool { return strings.Contains(stderr(), text) })
		syscall.Kill(pid, sig)
	}
}

// TestExecDiesOfSIGINT: a pace exec that SIGINT stopped, or whose command
// SIGINT killed, dies of SIGINT itself, as the command would have: a
// shell waiting for it (a loop of pace exec) stops its script only then.
// pace used to exit 130, which bash takes for a command that handled
// Ctrl-C: each Ctrl-C ended one call and the loop went on to the next.
// A command that exits 130 of its own accord, and a SIGTERM, still give
// an exit status.
func TestExecDiesOfSIGINT(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	quota := []string{"exec", "-v", "--key", "q", "--state", dir, "-r", "1/min"}
	if got, stderr := paceEnds(t, dir, "first", nil, append(quota, "--", "true")...); got != "exit 0" {
		t.Fatalf("first call: %s: %s", got, stderr)
	}
	checkEnds(t, dir, []endCase{
		{"command killed by SIGINT", nil, []string{"exec", "--", "sh", "-c", "kill -INT $$"}, "killed by interrupt"},
		{"command exits 130", nil, []string{"exec", "--", "sh", "-c", "exit 130"}, "exit 130"},
		{"SIGINT while waiting", signalOnce(t, "waiting for", syscall.SIGINT), append(quota, "--", "true"), "killed by interrupt"},
		{"SIGTERM while waiting", signalOnce(t, "waiting for", syscall.SIGTERM), append(quota, "--", "true"), "exit 143"},
	})
}

// endCase is a pace that checkEnds runs: its arguments, the signal
// function for paceEnds, and how it should end.
type endCase struct {
	name   string
	signal func(int, func() string)
	args   []string
	want   string
}

// checkEnds runs each case's pace (paceEnds) and checks how it ended.
func checkEnds(t *testing.T, dir string, cases []endCase) {
	t.Helper()
	for _, c := range cases {
		got, stderr := paceEnds(t, dir, strings.ReplaceAll(c.name, " ", "-"), c.signal, c.args...)
		if got != c.want {
			t.Errorf("%s: pace %s, want %s; stderr:\n%s", c.name, got, c.want, stderr)
		}
	}
}

// TestRunDiesOfSIGINT: pace run stopped by SIGINT dies of it once its
// summary is written, for the same reason as pace exec
// (TestExecDiesOfSIGINT); a SIGTERM, and a job's 130 that --halt makes
// pace's, still give exit statuses.
func TestRunDiesOfSIGINT(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := func(args ...string) []string {
		args = append([]string{"run", "-v", "--progress", "never", "-j", "1"}, args...)
		return append(args, ":::", "1", "2")
	}
	checkEnds(t, dir, []endCase{
		{"SIGINT while waiting", signalOnce(t, "job finished", syscall.SIGINT), run("-r", "1/min", "--", "true"), "killed by interrupt"},
		{"SIGTERM while waiting", signalOnce(t, "job finished", syscall.SIGTERM), run("-r", "1/min", "--", "true"), "exit 143"},
		{"a job's 130 by --halt", nil, run("--halt", "now,fail=1", "--", "sh", "-c", "exit 130"), "exit 130"},
	})
}

// TestProxyDiesOfSIGINT: pace proxy -- CMD whose CMD SIGINT killed (Ctrl-C
// reaches both) dies of SIGINT, as pace exec does, so that a shell loop
// of pace proxy -- CMD stops; it used to exit 130 and the loop went on. A
// CMD that exits 130 itself still gives 130.
func TestProxyDiesOfSIGINT(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		name, script, want string
	}{
		{"command killed by SIGINT", "kill -INT $$", "killed by interrupt"},
		{"command exits 130", "exit 130", "exit 130"},
	} {
		got, stderr := paceEnds(t, dir, strings.ReplaceAll(c.name, " ", "-"), nil,
			"proxy", "--progress", "never", "--upstream", "http://127.0.0.1:9", "--", "sh", "-c", c.script)
		if got != c.want {
			t.Errorf("%s: pace %s, want %s; stderr:\n%s", c.name, got, c.want, stderr)
		}
	}
}

// TestDryRunDiesOfSIGINT: a dry run (or an audit, a plot, the question of
// quota reset) that SIGINT stopped dies of it too, as a run does: a loop
// of pace run --dry-run went on at each Ctrl-C. The dry run reads a FIFO
// that stays open, so it is stopped while it waits for more items.
func TestDryRunDiesOfSIGINT(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "items")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	w, err := os.OpenFile(fifo, os.O_RDWR, 0) // a writer that stays
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.WriteString("a\n")
	out := filepath.Join(dir, "out")
	stdout, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	c := exec.Command("pace", "run", "--dry-run", "-a", fifo, "--", "echo")
	c.Stdout = stdout
	c.Env = append(os.Environ(), redisURLEnv+"=", "GORACE=atexit_sleep_ms=0")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the dry run to show its first item", func() bool { b, _ := os.ReadFile(out); return strings.Contains(string(b), "echo a") })
	syscall.Kill(c.Process.Pid, syscall.SIGINT)
	if got := waitEnd(t, c, "dry run"); got != "killed by interrupt" {
		t.Errorf("a dry run stopped by SIGINT: pace %s, want killed by interrupt", got)
	}
}

// TestProxyStopsWhileItsPortFileWaits: --port-file naming a FIFO waits
// for a reader; a signal then stops the proxy, which never served
// anyone, and never runs its -- CMD. The signal used to be swallowed (it cancelled a setup nobody
// watched any more): pace went on waiting.
func TestProxyStopsWhileItsPortFileWaits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "port")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	ran := filepath.Join(dir, "ran")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		for _, command := range [][]string{nil, {"--", "touch", ran}} {
			args := append([]string{"proxy", "--progress", "never", "--upstream", "http://127.0.0.1:9",
				"--metrics-addr", "127.0.0.1:0", "--port-file", fifo}, command...)
			got, stderr := paceEnds(t, dir, sig.String(), signalOnce(t, "metrics at", sig), args...)
			want := "killed by interrupt"
			if sig == syscall.SIGTERM {
				want = "exit 143"
			}
			if got != want {
				t.Errorf("%v while --port-file waits for a reader (%q): pace %s, want %s; stderr:\n%s", sig, command, got, want, stderr)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Errorf("%v while --port-file waits for a reader: the command ran", sig)
			}
		}
	}
}
