//go:build unix

package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pace-cli/pace/runner"
)

// The test binary doubles as the child process: with PACE_RUNNER_HELPER
// set it behaves as that says and exits.
func TestMain(m *testing.M) {
	if mode := os.Getenv("PACE_RUNNER_HELPER"); mode != "" {
		helper(mode, os.Args[len(os.Args)-1])
		os.Exit(0)
	}
	// The helpers are this race-enabled binary, which otherwise sleeps
	// 1s at every exit: a second for each helper the tests wait for.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

func helper(mode, arg string) {
	switch mode {
	case "exit":
		n, _ := strconv.Atoi(arg)
		fmt.Print("about to exit")
		fmt.Fprint(os.Stderr, "on stderr")
		os.Exit(n)
	case "bytes":
		n, _ := strconv.Atoi(arg)
		line := strings.Repeat("x", 99) + "\n"
		for i := 0; i < n/100; i++ {
			os.Stdout.WriteString(line)
		}
	case "stdin":
		b, err := io.ReadAll(os.Stdin)
		fmt.Printf("read %d bytes, err %v", len(b), err)
	case "spin":
		// Runs on a CPU for arg milliseconds of its own time.
		n, _ := strconv.Atoi(arg)
		var ru syscall.Rusage
		for {
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= time.Duration(n)*time.Millisecond {
				return
			}
		}
	case "pgid":
		pgid, _ := syscall.Getpgid(0)
		fmt.Printf("pid %d pgid %d", os.Getpid(), pgid)
	case "parent":
		// Acts as pace: runs parentJobs jobs at once, so that they start
		// from different threads, each recording its pid and sleeping.
		e := &Executor{Builder: Lines{}}
		done := make(chan bool)
		for i := range parentJobs {
			f := fmt.Sprintf("%s.%d", arg, i)
			go func() {
				e.Execute(context.Background(), &runner.Job{Seq: int64(i + 1), Argv: []string{"sh", "-c", "echo $$ > " + f + ".tmp; mv " + f + ".tmp " + f + "; exec sleep 60"}})
				done <- true
			}()
		}
		<-done
		os.Exit(0)
	case "reaper-window":
		// Acts as pace run with a reaper, as reaper-parent, running one
		// job that leaves a child in the background (its pid in file
		// arg.bg), and stops for good between the job's start and telling
		// the reaper its group, once there (file arg.paused).
		if arg == "reap" {
			Reap(os.Stdin)
			os.Exit(0)
		}
		exe, _ := os.Executable()
		e := &Executor{Builder: Lines{}, Reaper: []string{exe, "-test.run=^$", "reap"},
			started: func() {
				os.WriteFile(arg+".paused", nil, 0o644)
				time.Sleep(time.Hour) // killed long before
			}}
		e.Execute(context.Background(), &runner.Job{Seq: 1, Argv: []string{"sh", "-c",
			"sleep 3600 & echo $! > " + arg + ".tmp; mv " + arg + ".tmp " + arg + ".bg; wait"}})
		os.Exit(0)
	case "reaper-parent":
		// Acts as pace run with a reaper (this binary again, which Reaps
		// when its last argument is "reap"): runs parentJobs jobs that
		// each leave a child running in the background and wait for it.
		if arg == "reap" {
			Reap(os.Stdin)
			os.Exit(0)
		}
		exe, _ := os.Executable()
		e := &Executor{Builder: Lines{}, Reaper: []string{exe, "-test.run=^$", "reap"}}
		done := make(chan bool)
		for i := range parentJobs {
			f := fmt.Sprintf("%s.%d", arg, i)
			go func() {
				e.Execute(context.Background(), &runner.Job{Seq: int64(i + 1), Argv: []string{"sh", "-c",
					"sleep 60 & echo $! > " + f + ".bg; echo $$ > " + f + ".tmp; mv " + f + ".tmp " + f + "; wait"}})
				done <- true
			}()
		}
		<-done
		os.Exit(0)
	case "reap-list":
		// A reaper that kills nothing but lists in file arg, once its
		// input has ended, the groups and the JobEnv entries whose
		// processes it would kill.
		l, _ := readLeft(os.Stdin)
		var what []string
		for _, pgid := range l.groups {
			what = append(what, strconv.Itoa(pgid))
		}
		for mark := range l.marks {
			what = append(what, mark)
		}
		os.WriteFile(arg, []byte(strings.Join(what, " ")+"\n"), 0o644)
	case "hang", "ignore-term":
		if mode == "ignore-term" {
			signal.Ignore(syscall.SIGTERM)
		}
		// A grandchild in the same process group records its pid.
		gc := exec.Command("sleep", "1000")
		if err := gc.Start(); err != nil {
			os.Exit(99)
		}
		// Atomically: a test that sees the file must find the whole pid in it.
		os.WriteFile(arg+".tmp", []byte(strconv.Itoa(gc.Process.Pid)), 0o644)
		os.Rename(arg+".tmp", arg)
		time.Sleep(time.Hour) // killed long before; select{} would die of deadlock without -race
	}
}

// parentJobs is how many jobs the "parent" helper runs at once: more than
// there are starter threads.
const parentJobs = 6

// helperArgv returns the argv that runs this binary in mode.
func helperArgv(t *testing.T, mode, arg string) (*Executor, *runner.Job) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := &Executor{
		Builder: Lines{},
		Env:     append(os.Environ(), "PACE_RUNNER_HELPER="+mode),
	}
	return e, &runner.Job{Seq: 1, Attempt: 1, Slot: 1, Argv: []string{exe, "-test.run=^$", arg}}
}

func TestExecuteExitCodeAndOutput(t *testing.T) {
	e, job := helperArgv(t, "exit", "3")
	res := e.Execute(context.Background(), job)
	defer res.Close()
	if res.ExitCode != 3 || res.Signal != 0 || res.Err != nil || res.OK() {
		t.Errorf("exit 3: got exit %d signal %d err %v ok %v", res.ExitCode, res.Signal, res.Err, res.OK())
	}
	if got := string(res.Stdout.Bytes()); got != "about to exit" {
		t.Errorf("stdout = %q", got)
	}
	if got := string(res.Stderr.Bytes()); got != "on stderr" {
		t.Errorf("stderr = %q", got)
	}
	if res.Status() != "exit status 3" {
		t.Errorf("Status() = %q", res.Status())
	}

	e, job = helperArgv(t, "exit", "0")
	if res := e.Execute(context.Background(), job); !res.OK() {
		t.Errorf("exit 0: %s, want ok", res.Status())
	}
}

func TestExecuteStdinIsNull(t *testing.T) {
	e, job := helperArgv(t, "stdin", "")
	res := e.Execute(context.Background(), job)
	defer res.Close()
	if got := string(res.Stdout.Bytes()); got != "read 0 bytes, err <nil>" {
		t.Errorf("child read stdin: %q, want 0 bytes at once", got)
	}
}

func TestExecuteOwnProcessGroup(t *testing.T) {
	e, job := helperArgv(t, "pgid", "")
	res := e.Execute(context.Background(), job)
	defer res.Close()
	var pid, pgid int
	fmt.Sscanf(string(res.Stdout.Bytes()), "pid %d pgid %d", &pid, &pgid)
	if pid == 0 || pgid != pid {
		t.Errorf("child pid %d pgid %d, want a group of its own", pid, pgid)
	}
}

func TestExecuteSpillsLargeOutput(t *testing.T) {
	dir := t.TempDir()
	e, job := helperArgv(t, "bytes", "300000")
	e.SpillLimit, e.TempDir = 64<<10, dir
	res := e.Execute(context.Background(), job)
	if !res.OK() || res.Stdout.Len() != 300000 || !res.Stdout.Spilled() {
		t.Fatalf("got %s, %d bytes, spilled %v; want ok, 300000, true", res.Status(), res.Stdout.Len(), res.Stdout.Spilled())
	}
	res.Close()
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("spill files left after Close: %d", len(files))
	}
}

// A stdout that cannot spill (no room for its temporary file) fails the
// job, and none of it is kept: a part would pass for the whole.
func TestExecuteSpillFailureKeepsNoPart(t *testing.T) {
	e, job := helperArgv(t, "bytes", "300000")
	e.SpillLimit, e.TempDir = 64<<10, filepath.Join(t.TempDir(), "missing")
	res := e.Execute(context.Background(), job)
	defer res.Close()
	if res.OK() || res.Err == nil || !strings.Contains(res.Err.Error(), "spill output") || res.Stdout != nil {
		t.Errorf("got %s (%v), stdout %d bytes; want a failure saying the spill failed, and no stdout", res.Status(), res.Err, res.Stdout.Len())
	}
}

// TestExecuteJobEnv: each job's environment holds JobEnv once, a value
// of its own, which replaces any the environment given had.
func TestExecuteJobEnv(t *testing.T) {
	for _, env := range [][]string{nil, {"A=1", JobEnv + "=outer", "B=2"}} {
		e := &Executor{Builder: Lines{}, Env: env}
		seen := map[string]bool{}
		for seq := range 3 {
			res := e.Execute(context.Background(), &runner.Job{Seq: int64(seq + 1), Argv: []string{"env"}})
			var vals []string
			for _, kv := range strings.Split(string(res.Stdout.Bytes()), "\n") {
				if v, ok := strings.CutPrefix(kv, JobEnv+"="); ok {
					vals = append(vals, v)
				}
			}
			res.Close()
			if len(vals) != 1 || seen[vals[0]] || !strings.HasSuffix(vals[0], "."+strconv.Itoa(seq+1)) {
				t.Errorf("Env %q, start %d: %s=%q, want one value of its own, ending .%d", env, seq+1, JobEnv, vals, seq+1)
			}
			if len(vals) > 0 {
				seen[vals[0]] = true
			}
		}
		e.Close()
	}
}

// alive reports whether the process with the pid in file is running.
func alive(t *testing.T, file string) bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("grandchild pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		t.Fatalf("grandchild pid file holds %q", b)
	}
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// A zombie is dead, whenever its new parent gets round to reaping it.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		return len(f) > 0 && f[0] != "Z"
	}
	return syscall.Kill(pid, 0) == nil
}

// slowly bounds the waits for what a loaded machine makes slow (a
// process's start, its death): generous, as tests share the machine with
// others (loads of 5 to 18 on two cores have been seen); a wait that ends
// well is not slowed by it.
const slowly = 30 * time.Second

// waitGone waits (bounded) for the process in file to be reaped by init.
func waitGone(t *testing.T, file string) bool {
	t.Helper()
	deadline := time.Now().Add(slowly)
	for time.Now().Before(deadline) {
		if !alive(t, file) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// A timeout that ends before the program could start is a timeout, not
// a program that could not start (which the job log would say as 127).
func TestExecuteTimeoutBeforeStart(t *testing.T) {
	e, job := helperArgv(t, "bytes", "1")
	e.Timeout = time.Nanosecond
	res := e.Execute(context.Background(), job)
	defer res.Close()
	if !res.TimedOut || res.OK() || res.Err != nil || !strings.HasPrefix(res.Status(), "timed out after 1ns") {
		t.Errorf("got %s (timed out %v, err %v), want a timeout", res.Status(), res.TimedOut, res.Err)
	}
}

// executeTimingOutOnceUp runs job with e, its Timeout held until file
// exists: until the helper has made its grandchild and written its pid
// there, on a loaded machine long after its start (a timeout of 1.5s
// counted from the start came first at a load of 11, and the test had no
// grandchild to check). It returns the result, and how long Execute took
// from the release of the timeout.
func executeTimingOutOnceUp(t *testing.T, e *Executor, job *runner.Job, file string) (*runner.Result, time.Duration) {
	t.Helper()
	e.timeouts.hold()
	done := make(chan *runner.Result, 1)
	go func() { done <- e.Execute(context.Background(), job) }()
	for deadline := time.Now().Add(slowly); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(file); err == nil {
			break
		}
		select {
		case res := <-done:
			res.Close()
			t.Fatalf("the job ended (%s) before writing %s", res.Status(), file)
		default:
		}
		if time.Now().After(deadline) {
			e.timeouts.release()
			t.Fatalf("%s did not appear within %v", file, slowly)
		}
	}
	released := time.Now()
	e.timeouts.release()
	select {
	case res := <-done:
		return res, time.Since(released)
	case <-time.After(slowly):
		t.Fatalf("Execute did not return within %v of a %v timeout", slowly, e.Timeout)
		return nil, 0
	}
}

func TestExecuteTimeoutKillsProcessGroup(t *testing.T) {
	for _, mode := range []string{"hang", "ignore-term"} {
		t.Run(mode, func(t *testing.T) {
			pidFile := t.TempDir() + "/gc"
			e, job := helperArgv(t, mode, pidFile)
			e.Timeout, e.KillGrace = 300*time.Millisecond, 200*time.Millisecond
			res, d := executeTimingOutOnceUp(t, e, job, pidFile)
			res.Close()
			if !res.TimedOut || res.OK() || res.Signal == 0 {
				t.Errorf("got %s (timed out %v, signal %d), want a timeout and a signal", res.Status(), res.TimedOut, res.Signal)
			}
			if !strings.HasPrefix(res.Status(), "timed out after 300ms") {
				t.Errorf("Status() = %q", res.Status())
			}
			// The grandchild, alive, would hold the output open for
			// 1000s, and the helper ignoring SIGTERM for an hour.
			if d > 30*time.Second {
				t.Errorf("Execute took %v after a 300ms timeout", d)
			}
			if !waitGone(t, pidFile) {
				t.Error("grandchild survived the timeout: process group not killed")
			}
		})
	}
}

func TestExecuteKillNow(t *testing.T) {
	pidFile := t.TempDir() + "/gc"
	e, job := helperArgv(t, "ignore-term", pidFile)
	e.KillGrace = time.Hour // only SIGKILL at once can end this quickly
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan *runner.Result)
	go func() { done <- e.Execute(ctx, job) }()
	deadline := time.Now().Add(slowly)
	for { // wait until the child is up
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cancel(runner.ErrKillNow)
			(<-done).Close()
			t.Fatalf("the helper did not write %s within %v", pidFile, slowly)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel(runner.ErrKillNow)
	select {
	case res := <-done:
		res.Close()
		if res.Signal != int(syscall.SIGKILL) {
			t.Errorf("signal %d, want SIGKILL", res.Signal)
		}
		if res.Status() != "killed by SIGKILL" {
			t.Errorf("Status() = %q", res.Status())
		}
	case <-time.After(slowly):
		t.Fatal("Execute did not return after ErrKillNow")
	}
	if !waitGone(t, pidFile) {
		t.Error("grandchild survived ErrKillNow")
	}
}

func TestExecuteNotFoundIsPermanent(t *testing.T) {
	e := &Executor{Builder: Lines{}}
	res := e.Execute(context.Background(), &runner.Job{Seq: 4, Argv: []string{"pace-no-such-program"}})
	if !errors.Is(res.Err, runner.ErrPermanent) || res.OK() {
		t.Errorf("Err = %v, want ErrPermanent", res.Err)
	}
	if res.Status() != "job 4: start pace-no-such-program: not found" {
		t.Errorf("Status() = %q", res.Status())
	}
}

func TestPrepareRejectsBadLines(t *testing.T) {
	e := &Executor{Builder: Lines{}}
	job := &runner.Job{Seq: 2, Item: "echo 'oops"}
	err := e.Prepare(job)
	if !errors.Is(err, errBadLine) || !strings.HasPrefix(err.Error(), "job 2: bad command line") {
		t.Errorf("Prepare(%q) = %v, want job 2: bad command line...", job.Item, err)
	}
	job = &runner.Job{Seq: 3, Item: "echo 'x; rm -rf ~'"}
	if err := e.Prepare(job); err != nil || job.CommandLine() != "echo 'x; rm -rf ~'" {
		t.Errorf("Prepare = %v, argv %q", err, job.Argv)
	}
}

// An argument longer than execve takes (Linux: 128 KiB) fails its job
// before it is admitted, spending no call; arguments too long in all
// fail the attempt for good: a retry, admitted again, fails the same.
func TestArgumentsTooLong(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the limit of one argument is Linux's")
	}
	e := &Executor{Builder: Lines{}}
	job := &runner.Job{Seq: 4, Item: "echo " + strings.Repeat("a", maxArg())}
	err := e.Prepare(job)
	if !errors.Is(err, runner.ErrPermanent) || !strings.Contains(err.Error(), "job 4: argument 1 of echo is ") {
		t.Errorf("Prepare(an argument of %d bytes) = %v, want a permanent error naming it", maxArg(), err)
	}
	job = &runner.Job{Seq: 5, Item: "echo " + strings.Repeat("a", maxArg()-1)}
	if err := e.Prepare(job); err != nil {
		t.Errorf("Prepare(an argument of %d bytes) = %v, want nil", maxArg()-1, err)
	}
	argv := append([]string{"true"}, strings.Fields(strings.Repeat("a ", 1<<20))...)
	res := e.Execute(context.Background(), &runner.Job{Seq: 6, Argv: argv})
	if !errors.Is(res.Err, runner.ErrPermanent) || !strings.Contains(res.Status(), "too long") {
		t.Errorf("Status() = %q (permanent %v), want a permanent 'too long'", res.Status(), errors.Is(res.Err, runner.ErrPermanent))
	}
}

func TestExecuteNotExecutable(t *testing.T) {
	script := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &Executor{Builder: Lines{}}
	res := e.Execute(context.Background(), &runner.Job{Seq: 5, Argv: []string{script}})
	if !errors.Is(res.Err, runner.ErrPermanent) || !strings.Contains(res.Status(), "not executable") {
		t.Errorf("Status() = %q (permanent %v), want a permanent 'not executable'", res.Status(), errors.Is(res.Err, runner.ErrPermanent))
	}
}

// A script without a #! line is no program: its job fails for good (a
// retry fails the same), saying so rather than "exec format error".
func TestExecuteNoShebang(t *testing.T) {
	script := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(script, []byte("echo hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := &Executor{Builder: Lines{}}
	res := e.Execute(context.Background(), &runner.Job{Seq: 5, Argv: []string{script}})
	want := "not a program this system runs (a script needs a first line such as #!/bin/sh)"
	if !errors.Is(res.Err, runner.ErrPermanent) || !strings.Contains(res.Status(), want) {
		t.Errorf("Status() = %q (permanent %v), want a permanent %q", res.Status(), errors.Is(res.Err, runner.ErrPermanent), want)
	}
}

// A script whose #! interpreter is missing is there: the job's failure
// names the interpreter, not the script, as not found.
func TestExecuteMissingInterpreter(t *testing.T) {
	script := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(script, []byte("#!/no/such/interpreter -e\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := &Executor{Builder: Lines{}}
	res := e.Execute(context.Background(), &runner.Job{Seq: 5, Argv: []string{script}})
	want := "its interpreter /no/such/interpreter (its #! line) was not found"
	if !errors.Is(res.Err, runner.ErrPermanent) || !strings.Contains(res.Status(), want) {
		t.Errorf("Status() = %q (permanent %v), want a permanent %q", res.Status(), errors.Is(res.Err, runner.ErrPermanent), want)
	}
}

// Running out of pace's own file descriptors or processes is not the
// job's failure: the pool tries it again.
func TestStartErrorResources(t *testing.T) {
	job := &runner.Job{Seq: 6, Argv: []string{"true"}}
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.EAGAIN} {
		err := startError(job, &os.PathError{Op: "fork/exec", Path: "true", Err: errno})
		if !errors.Is(err, runner.ErrNotStarted) || errors.Is(err, runner.ErrPermanent) {
			t.Errorf("startError(%v) = %v, want ErrNotStarted and not permanent", errno, err)
		}
	}
}

func TestExecuteReportsSent(t *testing.T) {
	e, job := helperArgv(t, "exit", "0")
	before := time.Now()
	res := e.Execute(context.Background(), job)
	defer res.Close()
	if res.Sent.Before(before) || res.Sent.After(time.Now()) {
		t.Errorf("Sent = %v, want between the call and its return", res.Sent)
	}
}

func TestPoolWithRealProcesses(t *testing.T) {
	// Three real jobs through the pool; the output of each is kept whole.
	e := &Executor{Builder: Lines{}}
	defer e.Close()
	var got []string
	p, _ := runner.NewPool(runner.Options{Jobs: 3, Executor: e, KeepOrder: true, OnEvent: func(ev runner.Event) {
		if ev.Kind == runner.JobDone {
			got = append(got, fmt.Sprintf("%s|%d", ev.Result.Stdout.Bytes(), ev.Result.ExitCode))
		}
	}})
	items := make(chan runner.Item, 3)
	for i, x := range []string{"x", "y", "z"} {
		items <- runner.Item{Text: fmt.Sprintf("sh -c 'printf \"%%s-a\\n%%s-b\\n\" %s %s; exit %d'", x, x, i+1)}
	}
	close(items)
	if err := p.Run(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	want := []string{"x-a\nx-b\n|1", "y-a\ny-b\n|2", "z-a\nz-b\n|3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("results %q, want %q", got, want)
	}
}

// startParent starts this test binary as a pace running parentJobs jobs
// (PACE_RUNNER_HELPER=helper) and waits until each job has written its
// pid to its file, whose names it returns.
func startParent(t *testing.T, helper string) (*exec.Cmd, []string) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "job")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(exe, "-test.run=^$", pidFile)
	parent.Env = append(os.Environ(), "PACE_RUNNER_HELPER="+helper)
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	files := make([]string, parentJobs)
	deadline := time.Now().Add(slowly)
	for i := range files {
		files[i] = fmt.Sprintf("%s.%d", pidFile, i)
		for {
			if _, err := os.Stat(files[i]); err == nil {
				break
			}
			if time.Now().After(deadline) {
				parent.Process.Kill()
				parent.Wait()
				t.Fatalf("job %d did not start", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return parent, files
}

// On Linux a job dies with pace, however pace dies: SIGKILL included,
// whichever starter thread started it.
func TestJobDiesWithPace(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux can tie a child's life to its parent's (Pdeathsig)")
	}
	parent, files := startParent(t, "parent")
	// Let the runtime move goroutines between threads for a while: the
	// child must not die with the thread that happened to start it.
	time.Sleep(200 * time.Millisecond)
	for i, f := range files {
		if !alive(t, f) {
			t.Fatalf("job %d died while pace was alive", i)
		}
	}
	parent.Process.Kill()
	parent.Wait()
	for i, f := range files {
		if !waitGone(t, f) {
			t.Errorf("job %d outlived a pace killed with SIGKILL", i)
		}
	}
}

// A job's background children may write its output after it exits, for as
// long as the grace period: that output is the job's.
func TestExecuteKeepsBackgroundOutput(t *testing.T) {
	// The grace bounds the wait for the background child on a loaded
	// machine; it ends the wait as soon as it has written.
	e := &Executor{Builder: Lines{}, KillGrace: slowly}
	defer e.Close()
	res := e.Execute(context.Background(), &runner.Job{Seq: 1, Argv: []string{"sh", "-c", "echo a; (sleep 0.2; echo b; echo c >&2) &"}})
	defer res.Close()
	if !res.OK() || string(res.Stdout.Bytes()) != "a\nb\n" || string(res.Stderr.Bytes()) != "c\n" {
		t.Errorf("got %s, stdout %q, stderr %q; want ok, \"a\\nb\\n\", \"c\\n\"", res.Status(), res.Stdout.Bytes(), res.Stderr.Bytes())
	}
}

// A background child that holds the output open past the grace period does
// not hold the job: Execute returns with the output written so far.
func TestExecuteBoundsBackgroundOutput(t *testing.T) {
	pidFile := t.TempDir() + "/bg"
	e := &Executor{Builder: Lines{}, KillGrace: 100 * time.Millisecond}
	defer e.Close()
	start := time.Now()
	res := e.Execute(context.Background(), &runner.Job{Seq: 1, Argv: []string{"sh", "-c", "echo a; sleep 60 & echo $! > " + pidFile}})
	defer res.Close()
	if b, err := os.ReadFile(pidFile); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if !res.OK() || string(res.Stdout.Bytes()) != "a\n" {
		t.Errorf("got %s, stdout %q; want ok, \"a\\n\"", res.Status(), res.Stdout.Bytes())
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Execute took %v: the background child held it", d)
	}
}

// Jobs run side by side keep their own exit codes and whole outputs.
func TestExecuteConcurrentJobsKeepTheirOutput(t *testing.T) {
	e := &Executor{Builder: Lines{}}
	defer e.Close()
	const n = 40
	results := make(chan *runner.Result, n)
	for i := range n {
		go func() {
			script := fmt.Sprintf("for k in 1 2 3 4 5; do echo %d-$k; echo e%d >&2; done; exit %d", i, i, i%7)
			results <- e.Execute(context.Background(), &runner.Job{Seq: int64(i), Argv: []string{"sh", "-c", script}})
		}()
	}
	for range n {
		res := <-results
		i := int(res.Job.Seq)
		var want, wantErr strings.Builder
		for k := 1; k <= 5; k++ {
			fmt.Fprintf(&want, "%d-%d\n", i, k)
			fmt.Fprintf(&wantErr, "e%d\n", i)
		}
		if res.Err != nil || res.ExitCode != i%7 || string(res.Stdout.Bytes()) != want.String() || string(res.Stderr.Bytes()) != wantErr.String() {
			t.Errorf("job %d: exit %d err %v stdout %q stderr %q; want exit %d and its own output", i, res.ExitCode, res.Err, res.Stdout.Bytes(), res.Stderr.Bytes(), i%7)
		}
		res.Close()
	}
}

func TestExecuteAfterClose(t *testing.T) {
	e := &Executor{Builder: Lines{}}
	e.Close()
	res := e.Execute(context.Background(), &runner.Job{Seq: 1, Argv: []string{"true"}})
	if res.Err == nil || res.OK() {
		t.Errorf("Execute after Close: %s, want an error", res.Status())
	}
}

func TestExecuteCancelledBeforeStart(t *testing.T) {
	e := &Executor{Builder: Lines{}}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := e.Execute(ctx, &runner.Job{Seq: 1, Argv: []string{"true"}})
	if !errors.Is(res.Err, context.Canceled) || !res.Sent.IsZero() {
		t.Errorf("Err = %v, Sent %v; want context.Canceled and nothing sent", res.Err, res.Sent)
	}
}

func TestExecuteDirAndEnv(t *testing.T) {
	dir := t.TempDir()
	e := &Executor{Builder: Lines{}, Dir: dir, Env: []string{"PACE_X=1", "PACE_X=2", "PATH=" + os.Getenv("PATH")}}
	defer e.Close()
	res := e.Execute(context.Background(), &runner.Job{Seq: 1, Argv: []string{"sh", "-c", "pwd; echo $PACE_X"}})
	defer res.Close()
	real, _ := filepath.EvalSymlinks(dir)
	if got := string(res.Stdout.Bytes()); got != real+"\n2\n" && got != dir+"\n2\n" {
		t.Errorf("stdout %q, want %q then the last PACE_X, 2", got, dir)
	}
}
