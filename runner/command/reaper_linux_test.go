package command

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pace-cli/pace/runner"
)

// setPipeSize makes the pipe that w writes to hold size bytes (the least
// is a page), so that it fills within a few hundred lines.
func setPipeSize(t *testing.T, w *os.File, size int) {
	t.Helper()
	rc, err := w.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { _, serr = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatalf("F_SETPIPE_SZ %d: %v", size, serr)
	}
}

// behind reports whether r keeps lines the pipe has not taken.
func (r *reaper) behind() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flushing
}

// TestTellFullPipe: with the pipe to the reaper full and nothing reading
// it (a reaper stopped, or starved), tell returns at once and keeps what
// the pipe does not take, in memory bounded by the jobs that were running
// meanwhile, not by all the jobs; once the reaper reads again, it is sent
// all of it: what it kills when its input ends is what the running jobs
// left, their groups and their JobEnv entries.
func TestTellFullPipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	setPipeSize(t, pw, 4096)
	pw.WriteString("@tok\n") // as start does
	r := &reaper{w: pw}
	running := map[uint64]int{} // pace's: the jobs not ended, by start, and their groups
	var n uint64
	start := func(pgid int) uint64 { // a job starts, and its group is told unless 0
		n++
		running[n] = 0
		r.tell('+', n, 0)
		if pgid != 0 {
			running[n] = pgid
			r.tell('=', n, pgid)
		}
		return n
	}
	end := func(n uint64) {
		delete(running, n)
		r.tell('-', n, 0)
	}
	told := make(chan struct{})
	go func() {
		defer close(told)
		// Before the pipe fills: 50 jobs start.
		var early []uint64
		for g := 100; g < 150; g++ {
			early = append(early, start(g))
		}
		// Jobs of 40 groups start and end until it is full, and 10,000
		// more after that.
		for i := 0; i < 100_000 && !r.behind(); i++ {
			end(start(200 + i%40))
		}
		for i := range 10_000 {
			end(start(200 + i%40))
		}
		// While it is full: half the jobs that started before end, 20
		// start, one starts on a group of the 40 and runs on, one starts
		// and ends on a group still running (a job's pid is a new job's
		// before the first has ended), and one is about to start (told
		// before its fork, its group not yet).
		for _, n := range early[:25] {
			end(n)
		}
		for g := 300; g < 320; g++ {
			start(g)
		}
		start(210)
		end(start(140))
		start(0)
	}()
	select {
	case <-told:
	case <-time.After(time.Minute):
		t.Fatal("tell blocked with the pipe to the reaper full")
	}
	if !r.behind() {
		t.Fatal("the pipe to the reaper never filled")
	}
	r.mu.Lock()
	kept := len(r.pending)
	r.mu.Unlock()
	// The 25 ended whose start was sent, the 22 that started since, and
	// the one whose start was being told as the pipe filled.
	if most := 25 + 22 + 1; kept > most {
		t.Errorf("tell keeps the lines of %d jobs, want at most the %d that ran while the pipe was full", kept, most)
	}

	// The reaper reads again.
	read := make(chan left, 1)
	go func() {
		l, _ := readLeft(pr)
		read <- l
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !r.wait(ctx) {
		t.Fatal("what the pipe did not take was not sent once the reaper read again")
	}
	for n, pgid := range running {
		if pgid == 300 {
			end(n)
		}
	}
	r.close()
	select {
	case l := <-read:
		groups, marks := map[int]bool{}, map[string]bool{}
		for n, pgid := range running {
			if pgid != 0 {
				groups[pgid] = true
			}
			marks[jobMark("tok", n)] = true
		}
		slices.Sort(l.groups)
		if want := slices.Sorted(maps.Keys(groups)); !slices.Equal(l.groups, want) {
			t.Errorf("the reaper kills groups %v, want the running %v", l.groups, want)
		}
		if !maps.Equal(l.marks, marks) {
			t.Errorf("the reaper kills the processes of %d JobEnv entries, want the %d of the running jobs", len(l.marks), len(marks))
		}
	case <-time.After(time.Minute):
		t.Fatal("the reaper did not see its input end")
	}
}

// TestStoppedReaper: pace, its reaper stopped (SIGSTOP, a debugger, a
// frozen cgroup), runs more jobs than the pipe to the reaper holds lines
// for, and closes in time. The reaper, which would take the jobs that
// ended meanwhile for running ones, is killed rather than left to kill
// their groups (whose ids may be others' by then) once it is continued.
func TestStoppedReaper(t *testing.T) {
	list := filepath.Join(t.TempDir(), "killed")
	t.Setenv("PACE_RUNNER_HELPER", "reap-list")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := &Executor{Builder: Lines{}, Reaper: []string{exe, "-test.run=^$", list}}
	run := func(seq int) {
		res := e.Execute(context.Background(), &runner.Job{Seq: int64(seq), Attempt: 1, Slot: 1, Argv: []string{"true"}})
		defer res.Close()
		if !res.OK() {
			t.Errorf("job %d: %s (%v), want ok", seq, res.Status(), res.Err)
		}
	}
	run(1) // starts the reaper
	r := &e.groups.reaper
	r.mu.Lock()
	p, w := r.p, r.w
	r.mu.Unlock()
	if p == nil || w == nil {
		t.Fatal("no reaper started with the first job")
	}
	defer p.Kill()
	pidfd, err := unix.PidfdOpen(p.Pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	setPipeSize(t, w, 4096)

	done := make(chan bool, 1)
	go func() {
		for seq := 2; seq <= 600; seq++ {
			run(seq)
		}
		behind := r.behind()
		e.Close()
		done <- behind
	}()
	select {
	case behind := <-done:
		if !behind {
			t.Fatal("the pipe to the stopped reaper never filled")
		}
	case <-time.After(time.Minute):
		t.Fatal("pace hung with its reaper stopped")
	}

	p.Signal(syscall.SIGCONT)
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(time.Minute/time.Millisecond))
	for errors.Is(err, unix.EINTR) {
		n, err = unix.Poll(fds, int(time.Minute/time.Millisecond))
	}
	if n != 1 {
		t.Fatalf("the reaper, continued, did not end (poll: %d, %v)", n, err)
	}
	if b, err := os.ReadFile(list); err == nil {
		if what := strings.TrimSpace(string(b)); what != "" {
			t.Errorf("continued, the reaper killed %s, of jobs that had ended", what)
		}
	}
}

// TestJobsChildrenDieWithPaceBeforeGroup: pace (a helper process running
// a job with a reaper) killed with SIGKILL after the job's start, before
// it told the reaper the job's group, takes with it what the job started
// in the background meanwhile: the reaper, told of the start before the
// fork, finds it by its JobEnv entry. Before, it knew of no job, and the
// child ran on.
func TestJobsChildrenDieWithPaceBeforeGroup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "job")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(exe, "-test.run=^$", file)
	parent.Env = append(os.Environ(), "PACE_RUNNER_HELPER=reaper-window")
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Wait()
	defer parent.Process.Kill()
	if !within(time.Minute, func() bool {
		_, err1 := os.Stat(file + ".bg")
		_, err2 := os.Stat(file + ".paused")
		return err1 == nil && err2 == nil
	}) {
		t.Fatal("the job did not start its background child, or pace did not pause before telling its group")
	}
	if !alive(t, file+".bg") {
		t.Fatal("the job's background child died while pace was alive")
	}
	parent.Process.Kill()
	parent.Wait()
	if !within(time.Minute, func() bool { return !alive(t, file+".bg") }) {
		t.Error("the job's background child outlived a pace killed before it told the reaper the job's group")
		if b, err := os.ReadFile(file + ".bg"); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// within reports whether cond holds within d, looking every 10ms.
func within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// TestSweepProcfs: the reaper's look through /proc kills a process whose
// environment holds a JobEnv entry it looks for, though it is in a group
// of its own, and spares one that holds another.
func TestSweepProcfs(t *testing.T) {
	ps := sysProcs()
	if ps == nil {
		t.Skip("no pidfds on this kernel")
	}
	start := func(mark string) *exec.Cmd {
		c := exec.Command("sleep", "3600")
		c.Env = append(os.Environ(), mark)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	token := newToken() // of its own: sweep looks through every process
	marked, other := start(jobMark(token, 7)), start(jobMark(token, 71))
	sweep(map[string]bool{jobMark(token, 7): true}, ps)
	err := marked.Wait()
	if ws, ok := marked.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the marked process: Wait = %v, want killed by SIGKILL", err)
	}
	if err := syscall.Kill(other.Process.Pid, 0); err != nil {
		t.Errorf("the process of another JobEnv value: %v, want it left running", err)
	}
}

// TestProcfsExecing: what procfs takes for a process in its execve is
// neither a running process (even one started with an empty environment:
// its command line reads), nor a zombie, nor a process that is gone.
func TestProcfsExecing(t *testing.T) {
	ps := sysProcs()
	if ps == nil {
		t.Skip("no pidfds on this kernel")
	}
	running := exec.Command("sleep", "3600")
	running.Env = []string{} // reads as an empty environment
	if err := running.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { running.Process.Kill(); running.Wait() }()
	// Start returns once the exec has passed its point of no return,
	// which may be before the kernel has written the arguments: wait for
	// them, lest the sleep be caught in its execve, as execing says.
	cmdline := fmt.Sprintf("/proc/%d/cmdline", running.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if b, _ := os.ReadFile(cmdline); len(b) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still empty after 10s", cmdline)
		}
	}
	if env := ps.environ(running.Process.Pid); len(env) != 0 {
		t.Fatalf("environ of a process started with none = %q", env)
	}
	if ps.execing(running.Process.Pid) {
		t.Errorf("execing(a sleep started with no environment) = true, want false")
	}
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	var info unix.Siginfo // wait for its exit without reaping it
	if err := unix.Waitid(unix.P_PID, zombie.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if ps.execing(zombie.Process.Pid) {
		t.Errorf("execing(a zombie) = true, want false")
	}
	zombie.Wait()
	if ps.execing(zombie.Process.Pid) {
		t.Errorf("execing(a process gone) = true, want false")
	}
}
