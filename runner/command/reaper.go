package command

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// A job is killed with pace however pace dies (Pdeathsig, Linux), but
// what the job started is not: a script's commands, a pipeline's members,
// a subshell's loop run on after a pace killed outright (SIGKILL, the OOM
// killer), with no row in the job log, making calls that no rule counts
// and holding a --global-jobs slot they inherited. pace kills the process
// groups of its running jobs itself whenever it stops in any other way.
// For SIGKILL, a reaper does it: a process of its own (pace run starts
// `pace reaper`, see Executor.Reaper) that pace tells each running job's
// group on a pipe, and that kills the groups still running when the pipe
// ends, which is when pace is gone. A job that ended is told too: what it
// left in the background runs on, as when pace exits normally.

// reaper is the write end of the pipe to the reaper process, if one runs.
// It is safe for concurrent use, and tell never waits for the reaper to
// read: a reaper that stops reading (SIGSTOP, a debugger, a frozen cgroup,
// or starved of the CPU) fills the pipe, and must not hold up the jobs,
// which tell it of their groups as they start and end. What the pipe does
// not take is kept as each group's change in count, and a goroutine sends
// it once the reaper reads again.
type reaper struct {
	once sync.Once
	p    *os.Process // the reaper; nil in tests of the pipe alone

	mu      sync.Mutex
	w       *os.File    // nil: no reaper (none asked for, or it failed, died or was closed)
	pending map[int]int // each group's change in count not yet in out, none 0
	buf     []byte      // the lines last taken from pending
	out     []byte      // what of buf the pipe has not taken yet
	// flushing is set while a goroutine (flush) owns buf and out, and
	// sends what is pending once out is written; flushed is closed when
	// it ends.
	flushing bool
	flushed  chan struct{}
}

// tell tells the reaper that a job's process group started (op '+') or
// that its job ended ('-'), without waiting: the line is written now if
// the pipe takes it, else kept and sent later, after the lines before it.
// What is kept is the change in each group's count, so a start and an end
// of one group that are both kept cancel out, and memory is bounded by
// the number of groups that changed, not of jobs. The reaper counts (a
// job's pid may be a new job's before the first has ended) and is sent a
// change of n as n lines "+PGID" (or "-PGID"), so that the count it holds
// for each group never falls below 0 on the way, and is pace's once it has
// read all there is. A reaper that cannot be told (it died) is dropped:
// the jobs run on without it.
func (r *reaper) tell(op byte, pgid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil {
		return
	}
	d := 1
	if op == '-' {
		d = -1
	}
	if r.pending == nil {
		r.pending = map[int]int{}
	}
	if r.pending[pgid] += d; r.pending[pgid] == 0 {
		delete(r.pending, pgid)
	}
	if r.flushing {
		return // flush sends it, after what it has
	}
	r.take()
	n, err := writeNow(r.w, r.out)
	r.out = r.out[n:]
	switch {
	case err != nil:
		r.drop()
	case len(r.out) > 0:
		r.flushing = true
		r.flushed = make(chan struct{})
		go r.flush(r.w)
	}
}

// take moves what is pending into buf as lines, the reaper's next, if
// out is written. Requires r.mu held.
func (r *reaper) take() {
	if len(r.out) > 0 || len(r.pending) == 0 {
		return
	}
	r.buf = r.buf[:0]
	for pgid, d := range r.pending {
		op := byte('+')
		if d < 0 {
			op, d = '-', -d
		}
		for range d {
			r.buf = strconv.AppendInt(append(r.buf, op), int64(pgid), 10)
			r.buf = append(r.buf, '\n')
		}
	}
	clear(r.pending)
	r.out = r.buf
}

// flush writes out, then what was told since, until there is nothing
// left or w is closed or broken. It waits for the reaper with r.mu
// released: tell only adds to pending meanwhile. Requires r.flushing set
// by its caller; it clears it when it ends.
func (r *reaper) flush(w *os.File) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.w == w {
		r.take()
		if len(r.out) == 0 {
			break
		}
		b := r.out
		r.mu.Unlock()
		n, err := w.Write(b)
		r.mu.Lock()
		r.out = r.out[n:]
		if err != nil {
			if r.w == w {
				r.drop()
			}
			break
		}
	}
	r.flushing = false
	close(r.flushed)
}

// drop forgets a reaper that cannot be told (it died). Requires r.mu
// held, and no write on r.w under way.
func (r *reaper) drop() {
	r.w.Close()
	r.w = nil
	r.pending, r.buf, r.out = nil, nil, nil
}

// wait waits until the reaper has been sent all it was told, or ctx is
// done, and reports whether it has.
func (r *reaper) wait(ctx context.Context) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.flushing {
		flushed := r.flushed
		r.mu.Unlock()
		select {
		case <-flushed:
		case <-ctx.Done():
		}
		r.mu.Lock()
		if ctx.Err() != nil {
			break
		}
	}
	return !r.flushing
}

// closeWait bounds how long close waits for the reaper, to read what it
// has not yet and to exit.
const closeWait = time.Second

// close ends the pipe, which tells the reaper to kill the groups left
// (none once every job has ended) and exit, and waits a moment for it.
// What the pipe has not taken yet goes first if the reaper reads it in
// time. A reaper that does not (stopped, starved) is killed instead: left
// to read on later, it would take jobs that have ended for running ones,
// and kill their groups, whose ids may be others' by then.
func (r *reaper) close() {
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	told := r.wait(ctx)
	r.mu.Lock()
	w, p := r.w, r.p
	r.w = nil
	r.mu.Unlock()
	if w == nil {
		return
	}
	if !told && p != nil {
		p.Kill()
	}
	w.Close()
	if p == nil {
		return
	}
	done := make(chan struct{})
	go func() { p.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done(): // stopped by someone, having read all: it reaps when it runs again
	}
}

// Self returns how to run this program again with args, as
// Executor.ReaperPath and Reaper: on Linux by the name /proc/self/exe, so
// that the reaper is not named as this program is from its start
// (`killall -9 pace` spares it), nor lost if the file was replaced since.
// It returns nil where the program cannot be found.
func Self(args ...string) (path string, argv []string) {
	path, err := os.Executable()
	if err != nil {
		return "", nil
	}
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		path = "/proc/self/exe"
	}
	return path, append([]string{os.Args[0]}, args...)
}

// RunReaper is the reaper's process: it ignores the signals that stop
// pace (it must outlive pace, and is not a job), takes a name that is not
// pace's where it can (Linux: `killall -9 pace` and `pkill -9 pace` then
// spare it), and Reaps in.
func RunReaper(in io.Reader) error {
	signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	os.WriteFile("/proc/self/comm", []byte("reaper"), 0)
	return Reap(in)
}

// Reap is the reaper's work (Executor.Reaper): it reads the lines pace
// writes on in, "+PGID" when a job's process group starts and "-PGID"
// when its job ends, and when in ends (pace exited, or died) sends
// SIGKILL to each group still running (Unix; elsewhere there are no
// groups, and it only reads). It returns once it has. A group runs while
// it has had more "+" lines than "-" (a job's pid may be a new job's
// before the first job has ended). The lines of one group come in order,
// but not always one a job: when the reaper fell behind (stopped, or
// starved) and the pipe filled, pace sends each group's net change since,
// as that many lines of one sign, and a start and an end that cancel not
// at all.
func Reap(in io.Reader) error { return reap(in, killPgid) }

// reap is Reap with the kill of a group: never of 0 (the reaper's own
// group) or of 1 and below (kill(-1) is every process the user has).
func reap(in io.Reader, kill func(pgid int)) error {
	running := map[int]int{} // a count each: a pid may be reused while counted
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			running[pgid]++
		case '-':
			if running[pgid]--; running[pgid] <= 0 {
				delete(running, pgid)
			}
		}
	}
	for pgid := range running {
		kill(pgid)
	}
	return sc.Err()
}
