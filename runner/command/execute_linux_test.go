package command

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pace-cli/pace/runner"
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
	e.Timeout, e.KillGrace = 300*time.Millisecond, 200*time.Millisecond
	res, _ = executeTimingOutOnceUp(t, e, job, pidFile)
	res.Close()
	if !res.TimedOut || res.Signal == 0 {
		t.Errorf("got %s, want a timeout and a signal", res.Status())
	}
	if !waitGone(t, pidFile) {
		t.Error("grandchild survived the timeout")
	}
}

func init() {
	// The spin helper spins on the main thread, the one whose schedstat
	// /proc/PID/schedstat gives (a thread group's leader): locked in init,
	// main runs on it.
	if os.Getenv("PACE_RUNNER_HELPER") == "spin" {
		runtime.LockOSThread()
	}
}

// A child's scheduling is read as it exits, before it is reaped: how long
// it ran on a CPU (at least what it spun for) and how long it waited for
// one. The margin stretches with the wait (throttle/margin.Load).
func TestExecuteReportsSchedstat(t *testing.T) {
	if !pidfdWorks() {
		t.Skip("this kernel has no pidfds: the child is reaped before its schedstat can be read")
	}
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("this kernel has no /proc/PID/schedstat")
	}
	e, job := helperArgv(t, "spin", "30")
	res := e.Execute(context.Background(), job)
	defer res.Close()
	if res.Err != nil || res.ExitCode != 0 {
		t.Fatalf("spin: %s, err %v", res.Status(), res.Err)
	}
	// The spinning runs on the main thread (init locks it there), whose
	// schedstat is the one read; the runtime's other threads took a
	// little of the 30ms the process as a whole spun for.
	if res.CPU < 20*time.Millisecond || res.CPU > res.Runtime+time.Second {
		t.Errorf("CPU = %v after spinning for 30ms of CPU time (runtime %v)", res.CPU, res.Runtime)
	}
	if res.Queued < 0 {
		t.Errorf("Queued = %v, want >= 0", res.Queued)
	}
	if cpu, _ := schedstat(os.Getpid()); cpu <= 0 {
		t.Errorf("schedstat of this process: CPU %v, want > 0", cpu)
	}
	if cpu, q := schedstat(-1); cpu != 0 || q != 0 {
		t.Errorf("schedstat of no process = %v, %v; want zeros", cpu, q)
	}
}

// TestTimeoutHeldWhileStopped: a job stopped with pace (Ctrl-Z:
// SignalRunning with SIGSTOP, then SIGCONT) does not spend its timeout
// while stopped. The job waits for a file and has a 2 s timeout; it is
// stopped for 3 s from its start, the file made meanwhile, so that it
// ends soon after it is continued, with most of its timeout left (all but
// the time it took to start and be stopped, which a loaded machine
// stretches). Counting the stop, the timeout would kill it while stopped.
func TestTimeoutHeldWhileStopped(t *testing.T) {
	t.Parallel()
	e := &Executor{Builder: Lines{}, Timeout: 2 * time.Second, KillGrace: 100 * time.Millisecond}
	defer e.Close()
	flag := t.TempDir() + "/go"
	job := &runner.Job{Seq: 1, Attempt: 1, Slot: 1,
		Argv: []string{"sh", "-c", `while [ ! -e "$1" ]; do sleep 0.02; done`, "sh", flag}}
	done := make(chan *runner.Result, 1)
	go func() { done <- e.Execute(context.Background(), job) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		e.groups.mu.Lock()
		n := len(e.groups.m)
		e.groups.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the job did not start")
		}
	}
	e.SignalRunning(syscall.SIGSTOP)
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	e.SignalRunning(syscall.SIGCONT)
	res := <-done
	defer res.Close()
	if res.TimedOut || !res.OK() {
		t.Errorf("got %s (timed out %v), want ok: the stop counted against the timeout", res.Status(), res.TimedOut)
	}

	// The timeout still works after a stop: a job that runs past it once
	// continued is killed.
	e2 := &Executor{Builder: Lines{}, Timeout: 200 * time.Millisecond, KillGrace: 100 * time.Millisecond}
	defer e2.Close()
	e2.SignalRunning(syscall.SIGSTOP)
	e2.SignalRunning(syscall.SIGCONT)
	res = e2.Execute(context.Background(), &runner.Job{Seq: 2, Attempt: 1, Slot: 1, Argv: []string{"sleep", "30"}})
	defer res.Close()
	if !res.TimedOut {
		t.Errorf("got %s, want a timeout", res.Status())
	}
}

// TestJobStartedWhileStoppedIsStopped: a job that starts while the others
// are stopped (it was being started at Ctrl-Z) is stopped with them, and
// continued with them: it ran while pace was stopped. (It runs from its
// exec until pace counts it in, which a job that ends at once may
// outrun; this one waits for a file made once it is seen stopped.)
func TestJobStartedWhileStoppedIsStopped(t *testing.T) {
	t.Parallel()
	e := &Executor{Builder: Lines{}, KillGrace: 100 * time.Millisecond}
	defer e.Close()
	flag := t.TempDir() + "/go"
	e.SignalRunning(syscall.SIGSTOP)
	done := make(chan *runner.Result, 1)
	go func() {
		done <- e.Execute(context.Background(), &runner.Job{Seq: 1, Attempt: 1, Slot: 1,
			Argv: []string{"sh", "-c", `while [ ! -e "$1" ]; do sleep 0.02; done`, "sh", flag}})
	}()
	stopped := false
	for deadline := time.Now().Add(5 * time.Second); !stopped && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		select {
		case res := <-done:
			res.Close()
			t.Fatalf("the job ran to its end (%s) while the others were stopped", res.Status())
		default:
		}
		e.groups.mu.Lock()
		for pid := range e.groups.m {
			stopped = stopped || groupStopped(pid)
		}
		e.groups.mu.Unlock()
	}
	if !stopped {
		os.WriteFile(flag, nil, 0o600)
		t.Fatal("the job started while the others were stopped was not stopped")
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.SignalRunning(syscall.SIGCONT)
	select {
	case res := <-done:
		defer res.Close()
		if !res.OK() {
			t.Errorf("continued, the job ended %s, want ok", res.Status())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job was not continued")
	}
}

// groupStopped reports whether a process of the process group pgid is
// stopped. The leader may not be: a shell waits in vfork (state D) for a
// child that the stop reached before its exec.
func groupStopped(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, _ := os.ReadFile(f)
		_, after, ok := strings.Cut(string(b), ") ")
		fields := strings.Fields(after)
		if ok && len(fields) > 2 && fields[0] == "T" && fields[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}
