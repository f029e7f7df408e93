package cmd

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// output is pace's stdout, where job output goes. A write that fails
// fails the job whose output it was: the caller learns why. When the
// reader has gone (a pipe into head) broken reports it, once, so that pace
// starts nothing more and kills the running jobs instead of dying of
// SIGPIPE and leaving them behind; later writes are dropped. Any other
// failure (a full disk, a closed descriptor) is returned as it is.
//
// A write to a pipe or a terminal whose reader stalls (a FIFO nobody
// reads, a terminal paused with Ctrl-S) blocks, and no signal ends it.
// Once the run is being killed (giveUp), pace waits for such a reader no
// longer: a piece of output it does not take within stallPatience is
// abandoned, left to a goroutine blocked in the write, and that write and
// every later one return errStdoutStalled. Until giveUp, writes wait as
// long as the reader does.
//
// The zero value has broken unset: set it before the first write. It is
// safe for concurrent use; writes are made one at a time.
type output struct {
	w      io.Writer
	broken func()

	// mu serialises writes: it is held while a write waits for the
	// reader, until giveUp bounds that wait.
	mu      sync.Mutex
	buf     []byte // the piece being written; requires mu
	gone    atomic.Bool
	stalled atomic.Bool
	once    sync.Once
	init    sync.Once
	quit    chan struct{} // closed by giveUp
	quitted sync.Once
}

// errStdoutGone is the error of a write after the reader of stdout went.
var errStdoutGone = errors.New("stdout closed by its reader")

// errStdoutStalled is the error of a write given up on: the run was being
// killed and the reader of stdout took nothing.
var errStdoutStalled = errors.New("stdout is not being read")

// outputPiece is the most a write hands the kernel at once: stdout must
// take a piece of this size within stallPatience once the run is killed.
const outputPiece = 64 << 10

// stallPatience is how long stdout may take nothing once the run is being
// killed before its output is given up.
const stallPatience = time.Second

// Write writes b to stdout.
func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for {
		switch {
		case o.gone.Load():
			return n, errStdoutGone
		case o.stalled.Load():
			return n, errStdoutStalled
		case n == len(b) && n > 0:
			return n, nil
		}
		piece := b[n:min(len(b), n+outputPiece)]
		m, err := o.writePiece(piece)
		n += m
		if err != nil && errors.Is(err, syscall.EPIPE) {
			o.gone.Store(true)
			o.once.Do(o.broken)
			return n, errStdoutGone
		}
		if err != nil || len(b) == 0 {
			return n, err
		}
	}
}

// writePiece writes p from a goroutine of its own, with a copy of p, so
// that a write blocked for good can be left behind. Requires o.mu held.
func (o *output) writePiece(p []byte) (int, error) {
	if cap(o.buf) < len(p) {
		o.buf = make([]byte, len(p), min(max(len(p), 4<<10), outputPiece))
	}
	buf := o.buf[:len(p)]
	copy(buf, p)
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := o.w.Write(buf)
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		return r.n, r.err
	case <-o.quitting():
	}
	t := time.NewTimer(stallPatience)
	defer t.Stop()
	select {
	case r := <-done:
		return r.n, r.err
	case <-t.C:
		// The goroutine keeps buf: it may still write it if the
		// reader wakes up, and nothing else is written after it.
		o.buf = nil
		o.stalled.Store(true)
		return 0, errStdoutStalled
	}
}

// quitting returns the channel that giveUp closes.
func (o *output) quitting() chan struct{} {
	o.init.Do(func() { o.quit = make(chan struct{}) })
	return o.quit
}

// giveUp bounds the wait for a stalled reader from now on: the run is
// being killed, and pace must not wait for stdout for ever.
func (o *output) giveUp() {
	q := o.quitting()
	o.quitted.Do(func() { close(q) })
}

// closed reports whether the reader of stdout has gone.
func (o *output) closed() bool { return o.gone.Load() }
