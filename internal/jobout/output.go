package jobout

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Output is pace's stdout, where job output goes. A write that fails
// fails the job whose output it was: the caller learns why. When the
// reader has gone (a pipe into head) broken reports it, once, so that pace
// starts nothing more and kills the running jobs instead of dying of
// SIGPIPE and leaving them behind; later writes are dropped. Any other
// failure (a full disk, a closed descriptor) is returned as it is.
//
// A write to a pipe or a terminal whose reader stalls (a FIFO nobody
// reads, a terminal paused with Ctrl-S) blocks, and no signal ends it.
// Once the run is being killed (giveUp), pace waits for such a reader no
// longer: a piece of output it does not take within StallPatience is
// abandoned, left to a goroutine blocked in the write, and that write and
// every later one return ErrStalled. Until giveUp, writes wait as
// long as the reader does.
//
// When stdout is a regular file, a piece of output (one job's) that
// cannot be written whole is cut off again: the caller marks where it
// begins with begin and calls cut on failure, so that a full disk leaves
// no torn line. Only the bytes a write returned are counted as written,
// and a piece a write of which was given up on (its goroutine may still
// write it) is never cut. On a pipe or a terminal what was written stays.
//
// Make it with New (a literal cuts nothing). It is safe for
// concurrent use, writes one at a time; but begin, the writes of one piece
// and cut must not be interleaved with another piece's.
type Output struct {
	w      io.Writer
	broken func()
	file   *os.File // w if a regular file, whose end can be cut off
	steady bool     // w is a device other than a terminal: written directly

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

	// start is where the file ended when the piece being written began
	// (-1: unknown, nothing is cut), written how many bytes of it writes
	// returned since, and abandoned whether a write of it was given up
	// on. They require mu.
	start, written int64
	abandoned      bool
	// pending: Begin was called and start is read at the piece's first
	// write (a piece with nothing to write, as each of pace proxy's
	// requests, costs no fstat). Requires mu.
	pending bool
}

// New returns the output that writes to w and calls broken when its
// reader has gone. isTerminal tells a terminal from another character
// device (/dev/null, which no reader can stall); nil takes every one for
// a terminal.
func New(w io.Writer, broken func(), isTerminal func(*os.File) bool) *Output {
	o := &Output{w: w, broken: broken, start: -1}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			o.file = f
		} else if err == nil && fi.Mode()&os.ModeCharDevice != 0 && isTerminal != nil && !isTerminal(f) {
			o.steady = true // /dev/null: no reader to stall
		}
	}
	return o
}

// ErrGone is the error of a write after the reader of stdout went.
var ErrGone = errors.New("stdout closed by its reader")

// ErrStalled is the error of a write given up on: the run was being
// killed and the reader of stdout took nothing.
var ErrStalled = errors.New("stdout is not being read")

// outputPiece is the most a write hands the kernel at once: stdout must
// take a piece of this size within StallPatience once the run is killed.
const outputPiece = 64 << 10

// StallPatience is how long stdout may take nothing once the run is being
// killed before its output is given up.
const StallPatience = time.Second

// OnBroken sets broken, called once when the reader has gone; it must be
// set before the first write.
func (o *Output) OnBroken(broken func()) { o.broken = broken }

// Write writes b to stdout.
func (o *Output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for {
		switch {
		case o.gone.Load():
			return n, ErrGone
		case o.stalled.Load():
			return n, ErrStalled
		case n == len(b):
			// Written; or empty, which tells only whether stdout is
			// gone: handed to a device, it would fail on /dev/full
			// with nothing lost.
			return n, nil
		}
		if o.pending {
			o.markStart()
		}
		piece := b[n:min(len(b), n+outputPiece)]
		m, err := o.writePiece(piece)
		n += m
		o.written += int64(m)
		if err != nil && errors.Is(err, syscall.EPIPE) {
			o.gone.Store(true)
			o.once.Do(o.broken)
			return n, ErrGone
		}
		if err != nil {
			return n, err
		}
	}
}

// writePiece writes p from a goroutine of its own, with a copy of p, so
// that a write blocked for good can be left behind. Requires o.mu held.
func (o *Output) writePiece(p []byte) (int, error) {
	if o.steady || len(p) == 0 {
		return o.w.Write(p) // a device's writes end, and so does an empty one
	}
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
	case <-o.Quitting():
	}
	t := time.NewTimer(StallPatience)
	defer t.Stop()
	select {
	case r := <-done:
		return r.n, r.err
	case <-t.C:
		// The goroutine keeps buf: it may still write it if the
		// reader wakes up, and nothing else is written after it.
		o.buf = nil
		o.abandoned = true
		o.stalled.Store(true)
		return 0, ErrStalled
	}
}

// quitting returns the channel that giveUp closes.
func (o *Output) Quitting() chan struct{} {
	o.init.Do(func() { o.quit = make(chan struct{}) })
	return o.quit
}

// giveUp bounds the wait for a stalled reader from now on: the run is
// being killed, and pace must not wait for stdout for ever.
func (o *Output) GiveUp() {
	q := o.Quitting()
	o.quitted.Do(func() { close(q) })
}

// Begin marks the start of a piece of output, which Cut removes. It does
// nothing useful unless stdout is a regular file.
func (o *Output) Begin() {
	if o.file == nil {
		return // a pipe, a terminal: nothing is cut, and no lock is waited for
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.start, o.written, o.abandoned, o.pending = -1, 0, false, true
}

// markStart reads where the piece begun by Begin starts, at its first
// write: the file's end, not the descriptor's offset (under >>, O_APPEND,
// a write lands at the end whatever the offset says). Requires mu.
func (o *Output) markStart() {
	o.pending = false
	if fi, err := o.file.Stat(); err == nil {
		o.start = fi.Size()
	}
}

// cut removes what was written since begin, when the piece could not be
// written whole, and puts the offset back where it began, so that the
// next piece follows the last whole one. It returns why the part written
// stays: nothing is cut unless that part is the file's end, exactly (a
// writer sharing the file wrote after it, or the file was not written at
// its end, or a write of the piece was given up on: the goroutine left
// in it may still write, so where the piece ends is not known). On a pipe
// or a terminal it does nothing and returns nil.
func (o *Output) Cut() error {
	if o.file == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.abandoned {
		return errors.New("a write of it was given up on, and may yet reach stdout")
	}
	if o.start < 0 || o.written == 0 {
		return nil
	}
	end, err := o.file.Seek(0, io.SeekCurrent)
	if err != nil {
		return err
	}
	fi, err := o.file.Stat()
	if err != nil {
		return err
	}
	if end != o.start+o.written || fi.Size() != end {
		return fmt.Errorf("stdout was also written by another writer")
	}
	if err := o.file.Truncate(o.start); err != nil {
		return err
	}
	if _, err := o.file.Seek(o.start, io.SeekStart); err != nil {
		return err
	}
	o.written = 0
	return nil
}

// closed reports whether the reader of stdout has gone.
func (o *Output) Closed() bool { return o.gone.Load() }
