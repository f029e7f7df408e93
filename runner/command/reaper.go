package command

import (
	"context"
	"os"
	"strconv"
	"sync"
	"time"
)

// A job is killed with pace however pace dies (Pdeathsig, Linux), but
// what the job started is not: a script's commands, a pipeline's members,
// a subshell's loop run on after a pace killed outright (SIGKILL, the OOM
// killer), with no row in the job log, making calls that no rule counts
// and holding a --global-jobs slot they inherited. pace kills the process
// groups of its running jobs itself whenever it stops in any other way.
// For SIGKILL, a reaper does it: a process of its own (pace run starts
// `pace reaper`, see Executor.Reaper) that pace tells on a pipe of each
// job's start, before the fork, then of its process group, then of its
// end, and that, when the pipe ends, which is when pace is gone, kills
// the groups of the jobs still running, and (Linux) the processes whose
// environment holds the JobEnv value of a job not ended: what a job
// started before pace could tell its group, and what left the group. A
// job that ended is told too: what it left in the background runs on, as
// when pace exits normally.
//
// The lines pace writes, each ended by a newline:
//
//	@TOKEN   the executor's token (the first line)
//	+N       start N is about to be made (its JobEnv value is TOKEN.N)
//	=N PGID  start N's process group
//	-N       start N ended, or was not made

// reaper is the write end of the pipe to the reaper process, if one runs.
// It is safe for concurrent use, and tell never waits for the reaper to
// read: a reaper that stops reading (SIGSTOP, a debugger, a frozen cgroup,
// or starved of the CPU) fills the pipe, and must not hold up the jobs,
// which tell it of their starts, groups and ends. What the pipe does not
// take is kept, by start, and a goroutine sends it once the reaper reads
// again.
type reaper struct {
	once sync.Once
	p    *os.Process // the reaper; nil in tests of the pipe alone

	mu      sync.Mutex
	w       *os.File          // nil: no reaper (none asked for, or it failed, died or was closed)
	pending map[uint64]change // what is not yet in out, by start
	buf     []byte            // the lines last taken from pending
	out     []byte            // what of buf the pipe has not taken yet
	// flushing is set while a goroutine (flush) owns buf and out, and
	// sends what is pending once out is written; flushed is closed when
	// it ends.
	flushing bool
	flushed  chan struct{}
}

// change is what the reaper has not been sent yet of one start.
type change struct {
	start bool // "+N"
	pgid  int  // "=N PGID", if not 0
	end   bool // "-N"
}

// tell tells the reaper that start n is about to be made (op '+'), that
// its process group is pgid ('='), or that it ended or was not made ('-'),
// without waiting: the line is written now if the pipe takes it, else
// kept and sent later, after the lines before it. What is kept of a start
// that ends before its first line is sent is dropped: the reaper has no
// more to do with it than with one it never heard of. So memory is
// bounded by the starts that were running while the pipe was full, not by
// all the jobs. A reaper that cannot be told (it died) is dropped: the
// jobs run on without it.
func (r *reaper) tell(op byte, n uint64, pgid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w == nil {
		return
	}
	if r.pending == nil {
		r.pending = map[uint64]change{}
	}
	c := r.pending[n]
	switch op {
	case '+':
		c.start = true
	case '=':
		c.pgid = pgid
	case '-':
		c = change{end: !c.start}
	}
	if c == (change{}) {
		delete(r.pending, n)
	} else {
		r.pending[n] = c
	}
	if r.flushing {
		return // flush sends it, after what it has
	}
	r.take()
	w, err := writeNow(r.w, r.out)
	r.out = r.out[w:]
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
	for n, c := range r.pending {
		if c.start {
			r.buf = appendLine(r.buf, '+', n)
		}
		if c.pgid != 0 {
			r.buf = strconv.AppendUint(append(r.buf, '='), n, 10)
			r.buf = append(strconv.AppendInt(append(r.buf, ' '), int64(c.pgid), 10), '\n')
		}
		if c.end {
			r.buf = appendLine(r.buf, '-', n)
		}
	}
	clear(r.pending)
	r.out = r.buf
}

// appendLine appends the line opN to b.
func appendLine(b []byte, op byte, n uint64) []byte {
	return append(strconv.AppendUint(append(b, op), n, 10), '\n')
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

// close ends the pipe, which tells the reaper to kill what the jobs not
// ended left (nothing once every job has ended) and exit, and waits a
// moment for it. What the pipe has not taken yet goes first if the reaper
// reads it in time. A reaper that does not (stopped, starved) is killed
// instead: left to read on later, it would take jobs that have ended for
// running ones, and kill their groups, whose ids may be others' by then,
// and what they left in the background.
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
