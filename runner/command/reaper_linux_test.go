package command

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
// the pipe does not take, in memory bounded by the groups that changed,
// not by the jobs; once the reaper reads again, it is sent all of it: the
// groups it kills when its input ends are the ones running.
func TestTellFullPipe(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	setPipeSize(t, pw, 4096)
	r := &reaper{w: pw}
	running := map[int]int{} // pace's count of each group
	tell := func(op byte, pgid int) {
		if op == '+' {
			running[pgid]++
		} else if running[pgid]--; running[pgid] == 0 {
			delete(running, pgid)
		}
		r.tell(op, pgid)
	}
	told := make(chan struct{})
	go func() {
		defer close(told)
		// Before the pipe fills: 50 groups start.
		for g := 100; g < 150; g++ {
			tell('+', g)
		}
		// Jobs of 40 groups start and end until it is full, and 10,000
		// more after that.
		for i := 0; i < 100_000 && !r.behind(); i++ {
			tell('+', 200+i%40)
			tell('-', 200+i%40)
		}
		for i := range 10_000 {
			tell('+', 200+i%40)
			tell('-', 200+i%40)
		}
		// While it is full: half the groups that started before end, 20
		// start, one of the 40 starts again and runs on, and a job's pid
		// is a new job's before the first job has ended (counted twice,
		// then once).
		for g := 100; g < 125; g++ {
			tell('-', g)
		}
		for g := 300; g < 320; g++ {
			tell('+', g)
		}
		tell('+', 210)
		tell('+', 140)
		tell('-', 140)
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
	if changed := 40 + 25 + 20 + 1; kept > changed {
		t.Errorf("tell keeps the changes of %d groups, want at most the %d that changed", kept, changed)
	}

	// The reaper reads again.
	killed := make(chan []int, 1)
	go func() {
		var groups []int
		reap(pr, func(pgid int) { groups = append(groups, pgid) })
		killed <- groups
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if !r.wait(ctx) {
		t.Fatal("what the pipe did not take was not sent once the reaper read again")
	}
	tell('-', 300)
	r.close()
	select {
	case got := <-killed:
		slices.Sort(got)
		if want := slices.Sorted(maps.Keys(running)); !slices.Equal(got, want) {
			t.Errorf("the reaper kills groups %v, want the running %v", got, want)
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
		if groups := strings.TrimSpace(string(b)); groups != "" {
			t.Errorf("continued, the reaper killed groups %s of jobs that had ended", groups)
		}
	}
}
