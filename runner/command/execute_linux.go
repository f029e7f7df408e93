package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pace-cli/pace/runner"
)

// How a job runs on Linux, and why, cheapest first:
//
//   - The kernel kills a child when pace dies (Pdeathsig), but the signal is
//     tied to the thread that started the child, not to the process: Go
//     starts a child from whatever thread the calling goroutine runs on, and
//     the runtime may end that thread while the child runs, which would kill
//     the child early. So children are started from a few goroutines locked
//     to their threads for the executor's lifetime (starter). There are
//     several because a start holds its thread until the child has exec'd
//     (vfork): one thread would start children one at a time.
//   - The exit is awaited through the runtime's netpoller on a pidfd, which
//     becomes readable when the child exits, instead of a thread blocked in
//     waitid for every running job.
//   - The program is looked up in PATH once per run (pathCache), not once
//     per job; the null device and the environment are prepared once: a
//     job's is that and its JobEnv entry, one copy.
//   - Output goes through one pipe per stream into the job's Captures, read
//     with pooled buffers. Pipes, not files, because they tell when the
//     last writer is gone: a job's background children may go on writing
//     after it exits, for up to KillGrace, and that output is the job's.

// starters is how many threads start children.
const starters = 4

// spawner starts children and keeps what every job of an executor shares.
type spawner struct {
	once    sync.Once
	starts  chan startReq
	stopped chan struct{}
	closed  sync.Once

	setup    sync.Once
	env      []string // the children's environment, without JobEnv
	devNull  *os.File // the children's stdin
	setupErr error

	paths pathCache
}

// startReq asks a starter to start a process; the answer comes on done.
type startReq struct {
	path string
	argv []string
	attr *os.ProcAttr
	done chan startRes
}

type startRes struct {
	p   *os.Process
	err error
}

// start starts a process from a starter's thread; the first start keeps
// spare Ps for the starters if spare (Executor.SpareProcs).
func (s *spawner) start(path string, argv []string, attr *os.ProcAttr, spare bool) (*os.Process, error) {
	s.once.Do(func() {
		s.starts, s.stopped = make(chan startReq), make(chan struct{})
		if spare {
			spareProcs()
		}
		for range starters {
			go s.starter()
		}
	})
	req := startReq{path: path, argv: argv, attr: attr, done: make(chan startRes, 1)}
	select {
	case s.starts <- req:
		res := <-req.done
		return res.p, res.err
	case <-s.stopped:
		return nil, errors.New("executor closed")
	}
}

// spareProcs keeps the runtime one P (a slot to run Go code) beyond what
// the starters may hold. A start holds its P until the child has exec'd:
// the runtime's fork is a raw system call, which no other goroutine can
// take the P from. A child the terminal stopped before its exec (it was
// still in pace's process group when Ctrl-Z came: internal/jobctl) never
// gets there, and with as many such children as CPUs, nothing else ran,
// not even the handler of the signal that would continue them: pace hung.
// The spare Ps cost nothing while the starters are idle. It changes the
// whole process's setting, so only where Executor.SpareProcs asks.
func spareProcs() {
	if n := runtime.GOMAXPROCS(0); n <= starters {
		runtime.GOMAXPROCS(n + starters)
	}
}

// starter starts children from a goroutine locked to its thread for good,
// so that the children's parent thread lives as long as the executor: the
// goroutine never unlocks, so its thread ends only when it returns, after
// every child it started has been waited for.
func (s *spawner) starter() {
	runtime.LockOSThread()
	for {
		select {
		case req := <-s.starts:
			p, err := os.StartProcess(req.path, req.argv, req.attr)
			req.done <- startRes{p, err}
		case <-s.stopped:
			return
		}
	}
}

func (s *spawner) close() error {
	s.once.Do(func() { s.stopped = make(chan struct{}) })
	s.closed.Do(func() { close(s.stopped) })
	s.setup.Do(func() { s.setupErr = errors.New("executor closed") })
	if s.devNull != nil {
		s.devNull.Close()
	}
	return nil
}

// Execute runs job.Argv and waits for it. It returns a Result with the
// exit code or signal, the captured output, Sent (when the program had
// started), and Err set when the program could not be started.
func (e *Executor) Execute(ctx context.Context, job *runner.Job) *runner.Result {
	res := &runner.Result{
		Job:      *job,
		ExitCode: -1,
		Timeout:  e.Timeout,
		Stdout:   runner.NewCapture(e.SpillLimit, e.TempDir),
		Stderr:   runner.NewCapture(e.SpillLimit, e.TempDir),
	}
	grace := e.grace()
	jctx := ctx
	if e.Timeout > 0 {
		var end func()
		jctx, end = e.timeouts.start(ctx, e.Timeout)
		defer end()
	}
	var extra []*os.File
	if e.Inherit != nil {
		extra = e.Inherit(job.Admission)
	}
	e.groups.reaper.start(e.ReaperPath, e.Reaper, e.groups.run())
	n, mark := e.groups.starting()
	p, pidfd, outR, errR, err := e.spawn(jctx, job.Argv, mark, extra)
	if err != nil {
		e.groups.failed(n)
		if errors.Is(context.Cause(jctx), errTimeout) {
			res.TimedOut = true // its time was up before it could start
			return res
		}
		res.Err = startError(job, err)
		return res
	}
	res.Sent = time.Now()
	if e.started != nil {
		e.started()
	}
	e.groups.add(p.Pid, n)
	defer e.groups.remove(p.Pid, n)
	var copies sync.WaitGroup
	copies.Go(func() { drain(res.Stdout, outR) })
	copies.Go(func() { drain(res.Stderr, errR) })
	w := watchExit(p, pidfd)

	killed := false // pace killed the job (timeout, interrupt), not it itself
	select {
	case <-w.done:
	case <-jctx.Done():
		killed = true
		signalGroup(p, errors.Is(context.Cause(jctx), runner.ErrKillNow))
		t := time.NewTimer(grace)
		select {
		case <-w.done:
		case <-t.C:
			signalGroup(p, true)
			<-w.done
		}
		t.Stop()
	}
	// Background children may hold the output open: they have the grace
	// period, counted from the exit or the cancellation, to close it.
	outputDeadline := time.AfterFunc(grace, func() { outR.Close(); errR.Close() })
	copies.Wait()
	outputDeadline.Stop()
	outR.Close()
	errR.Close()
	if jctx.Err() != nil {
		// Whatever survived the grace period in the job's group goes now.
		signalGroup(p, true)
	}
	if killed {
		// And what the job started that left its group, as the reaper
		// kills it when pace is killed outright.
		if ps := sysProcs(); ps != nil {
			e.sweeps.sweep(mark, ps)
		}
	}

	res.TimedOut = errors.Is(context.Cause(jctx), errTimeout)
	res.CPU, res.Queued = w.cpu, w.queued
	if w.state != nil {
		res.ExitCode = w.state.ExitCode()
		res.Signal = exitSignal(w.state)
	}
	if w.err != nil {
		res.Err = fmt.Errorf("job %d: %w", job.Seq, w.err)
	}
	e.outputErr(res)
	return res
}

// spawn starts argv with its output going to two new pipes, whose read
// ends it returns, with the child's pidfd (-1 for none), the files extra
// as descriptors 3 and up, and mark, its JobEnv entry, in its environment.
func (e *Executor) spawn(ctx context.Context, argv []string, mark string, extra []*os.File) (p *os.Process, pidfd int, outR, errR *os.File, err error) {
	if err := ctx.Err(); err != nil {
		return nil, -1, nil, nil, err
	}
	s := &e.sp
	s.setup.Do(func() {
		s.env = withoutJobEnv((&exec.Cmd{Env: e.Env, Dir: e.Dir}).Environ())
		s.devNull, s.setupErr = os.Open(os.DevNull)
	})
	if s.setupErr != nil {
		return nil, -1, nil, nil, s.setupErr
	}
	path, cached, err := s.paths.look(argv[0])
	if err != nil {
		return nil, -1, nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, -1, nil, nil, err
	}
	defer outW.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		return nil, -1, nil, nil, err
	}
	defer errW.Close()
	env := jobEnviron(s.env, mark)
	for {
		pidfd = -1
		sys := procAttr()
		if pidfdWorks() {
			sys.PidFD = &pidfd
		}
		files := []*os.File{s.devNull, outW, errW}
		if len(extra) > 0 {
			files = append(files, extra...)
		}
		attr := &os.ProcAttr{Dir: e.Dir, Env: env, Files: files, Sys: sys}
		p, err = s.start(path, argv, attr, e.SpareProcs)
		if err == nil || !cached || resourceErr(err) {
			break
		}
		// The program the cache knew failed to start: look again, once.
		s.paths.forget(argv[0], path)
		if path, cached, err = s.paths.look(argv[0]); err != nil {
			break
		}
	}
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, -1, nil, nil, err
	}
	return p, pidfd, outR, errR, nil
}

// bufs holds the buffers output is read with.
var bufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// drain copies r into c until r ends or is closed.
func drain(c *runner.Capture, r *os.File) {
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	for {
		n, err := r.Read(*b)
		if n > 0 {
			c.Write((*b)[:n])
		}
		if err != nil {
			return
		}
	}
}

// exitWatch learns how a child ended; done is closed once state or err is
// set.
type exitWatch struct {
	done        chan struct{}
	state       *os.ProcessState
	err         error
	cpu, queued time.Duration // the child's schedstat as it exited; zero if unknown
}

// watchExit waits for p in a goroutine. With a pidfd the goroutine waits
// in the netpoller and only reaps the child once it has exited; without,
// it blocks a thread in wait.
func watchExit(p *os.Process, pidfd int) *exitWatch {
	w := &exitWatch{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		if pidfd >= 0 && awaitExit(pidfd) {
			// Exited, not reaped: its /proc entry stands until Wait.
			w.cpu, w.queued = schedstat(p.Pid)
		}
		w.state, w.err = p.Wait()
	}()
	return w
}

// awaitExit returns once the process of pidfd has exited (true), or at
// once if the netpoller cannot watch pidfd (false). It closes pidfd, a
// descriptor of its own: the os.Process keeps another.
func awaitExit(pidfd int) bool {
	// The descriptor shares its file with the os.Process's: left
	// non-blocking, Wait would return EAGAIN instead of waiting.
	if err := unix.SetNonblock(pidfd, true); err != nil {
		unix.Close(pidfd)
		return false
	}
	f := os.NewFile(uintptr(pidfd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		unix.SetNonblock(pidfd, false)
		return false
	}
	exited := false
	err = rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			return false
		}
		exited = err == nil && n > 0
		return err != nil || exited
	})
	if err != nil || !exited {
		rc.Control(func(fd uintptr) { unix.SetNonblock(int(fd), false) })
	}
	return err == nil && exited
}

// schedstat returns how long process pid ran on a CPU and how long it
// waited for one while runnable (/proc/PID/schedstat: nanoseconds), or
// zeros where the kernel does not tell.
func schedstat(pid int) (cpu, queued time.Duration) {
	var buf [96]byte
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/schedstat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0
	}
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return 0, 0
	}
	f := strings.Fields(string(buf[:n]))
	if len(f) < 2 {
		return 0, 0
	}
	c, err1 := strconv.ParseInt(f[0], 10, 64)
	q, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || c < 0 || q < 0 {
		return 0, 0
	}
	return time.Duration(c), time.Duration(q)
}

// pidfdWorks reports whether this kernel gives pidfds that waitid
// understands (Linux 5.4 and later, unless a sandbox forbids them).
var pidfdWorks = sync.OnceValue(func() bool {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var info unix.Siginfo
	// Not our child: ECHILD from a waitid that knows P_PIDFD, EINVAL
	// from one that does not.
	err = unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil)
	return err == unix.ECHILD
})
