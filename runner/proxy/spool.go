package proxy

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/pace-cli/pace/runner"
)

// Draining a long body while its request waits.
//
// A client that leaves while more of its body is unsent than the sockets
// hold keeps its close in its own kernel, behind that body: the proxy,
// which does not read a long body before the admission, would never see
// it go, and would send the request for nobody. So while a request with a
// long body waits, a drain reads the body as it comes into a spool (the
// first spoolMem bytes in memory, the rest in an unlinked temporary file):
// the client's close then comes through (watchHangup sees it), and a read
// that fails mid-body (the client gone, or a malformed chunk) ends the
// wait at once. Once admitted, the request's body is the spool, then the
// rest of the client's body read directly: the drain hands over at the
// first read that finds the spool empty, so the body still streams.
// The request is not admitted before the drain has its first bytes (or
// has stopped): a client that sends a head and then nothing spends
// nothing (stall.go).
//
// Bounded: a request spools at most spoolMax bytes and all requests at
// most spoolBudget on disk; past either, or on a write error (a full
// disk), the drain stops reading and the request waits as before, its
// client's close unseen behind the rest. A request with Expect:
// 100-continue is never drained: its client sends nothing before the
// admission.

// spoolMem is how much of a drained body a request keeps in memory
// before the spool goes to a file.
const spoolMem = 256 << 10

// spoolMax is the most of a body one request spools while it waits.
const spoolMax = 256 << 20

// spoolBudget is the most all waiting requests spool to disk at once;
// a variable, for tests.
var spoolBudget int64 = 1 << 30

// spoolChunk is the size of the drain's reads.
const spoolChunk = 32 << 10

// errDrainStopped is the drain's read error once abort made it stop.
var errDrainStopped = errors.New("pace proxy: the body's drain was stopped")

// drain reads a request's body into a spool while the request waits; it
// is the request's body from then on (see above).
type drain struct {
	p    *Proxy
	src  io.ReadCloser // the client's body
	body *clientBody   // what src reads from, to stop a read that blocks
	gone func(error)   // told of a read that failed while nobody read the spool
	// begun is closed once the body's first bytes have come, or the
	// drain has stopped.
	begun chan struct{}

	mu       sync.Mutex
	cond     sync.Cond
	mem      []byte   // the spool's first bytes
	memHeld  int64    // of p.buffered, for mem
	file     *os.File // the rest; nil until mem is full
	named    bool     // file has a name, to remove once closed (Windows)
	filed    int64    // bytes in file
	reserved int64    // of p.spooled, for file
	off      int64    // the reader's offset in mem, then file
	pending  []byte   // read once the drain was to stop
	err      error    // the source's error (io.EOF at its end), once done
	done     bool     // the drain has stopped reading src
	handover bool     // the reader asked for src, or the drain must stop
	reading  bool     // a reader took over: a failed read is its to report
	aborted  bool     // abort stopped the drain
	closed   bool     // the spool is given back
	exited   chan struct{}
}

// startDrain starts draining src, the body of a request that waits, and
// returns the drain, which is the request's body from then on. gone is
// called if a read fails before the request is admitted.
func (p *Proxy) startDrain(src io.ReadCloser, body *clientBody, gone func(error)) *drain {
	d := &drain{p: p, src: src, body: body, gone: gone, begun: make(chan struct{}), exited: make(chan struct{})}
	d.cond.L = &d.mu
	go d.run()
	return d
}

// run reads the body into the spool until its end, an error, a full
// spool or the hand-over.
func (d *drain) run() {
	defer close(d.exited)
	begun := false
	defer func() {
		if !begun {
			close(d.begun)
		}
	}()
	buf := make([]byte, spoolChunk)
	for {
		d.mu.Lock()
		if d.handover {
			d.stopLocked(nil)
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		n, err := d.src.Read(buf)
		if n > 0 && !begun {
			begun = true
			close(d.begun)
		}
		d.mu.Lock()
		if n > 0 {
			if d.handover {
				d.pending = append(d.pending, buf[:n]...)
			} else {
				d.spoolLocked(buf[:n])
			}
		}
		if err != nil {
			if d.aborted {
				err = errDrainStopped
			}
			d.stopLocked(err)
			report := err != io.EOF && !d.reading && !d.aborted
			d.mu.Unlock()
			if report {
				d.gone(err)
			}
			return
		}
		d.cond.Broadcast()
		d.mu.Unlock()
	}
}

// stopLocked marks the drain stopped, with err the source's error if
// any. Requires d.mu held.
func (d *drain) stopLocked(err error) {
	d.done, d.err = true, err
	d.cond.Broadcast()
}

// spoolLocked appends b to the spool; what it may not hold (a bound, a
// file that cannot be made or written) waits in pending for the reader,
// and the drain stops. Requires d.mu held.
func (d *drain) spoolLocked(b []byte) {
	if d.closed {
		return // the request is done: nothing reads the spool any more
	}
	if d.file == nil {
		if d.memHeld == 0 {
			d.memHeld = -1 // no room in memory: to the file
			if d.p.buffered.Add(spoolMem) <= bufferedBodiesBudget {
				d.memHeld, d.mem = spoolMem, make([]byte, 0, spoolMem)
			} else {
				d.p.buffered.Add(-spoolMem)
			}
		}
		k := min(cap(d.mem)-len(d.mem), len(b))
		d.mem = append(d.mem, b[:k]...)
		if b = b[k:]; len(b) == 0 {
			return
		}
	}
	if !d.fileLocked(b) {
		d.pending = append(d.pending, b...)
		d.handover = true
	}
}

// fileLocked appends b to the spool's file, made at the first call,
// within spoolMax and spoolBudget; it reports whether it did. Requires
// d.mu held.
func (d *drain) fileLocked(b []byte) bool {
	n := int64(len(b))
	if int64(len(d.mem))+d.filed+n > spoolMax {
		return false
	}
	if d.p.spooled.Add(n) > spoolBudget {
		d.p.spooled.Add(-n)
		return false
	}
	d.reserved += n
	if d.file == nil {
		// Without a name: nothing is left behind, whatever happens (a
		// named one, where it must be, is removed once closed).
		f, named, err := runner.TempFile("", "pace-proxy-body-*")
		if err != nil {
			return false
		}
		d.file, d.named = f, named
	}
	if _, err := d.file.WriteAt(b, d.filed); err != nil {
		return false
	}
	d.filed += n
	return true
}

// Read reads the spool, then what the drain read after the hand-over,
// then the client's body directly.
func (d *drain) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	d.mu.Lock()
	d.reading = true
	for {
		switch fo := d.off - int64(len(d.mem)); {
		case d.closed:
			d.mu.Unlock()
			return 0, errDrainStopped
		case fo < 0:
			n := copy(p, d.mem[d.off:])
			d.off += int64(n)
			d.mu.Unlock()
			return n, nil
		case fo < d.filed:
			n, err := d.file.ReadAt(p[:min(int64(len(p)), d.filed-fo)], fo)
			d.off += int64(n)
			d.mu.Unlock()
			if n > 0 {
				err = nil
			} else if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF // the file lost what was written
			}
			return n, err
		case len(d.pending) > 0:
			n := copy(p, d.pending)
			d.pending = d.pending[n:]
			d.mu.Unlock()
			return n, nil
		case d.done:
			err := d.err
			d.mu.Unlock()
			if err != nil {
				return 0, err
			}
			return d.src.Read(p)
		}
		d.handover = true
		d.cond.Wait()
	}
}

// Close gives the spool back and closes the client's body.
func (d *drain) Close() error {
	d.abort()
	return d.src.Close()
}

// abort stops the drain (a read in progress is cut short through the
// connection's deadline) and gives back the spool; Read fails after it.
// It is for a request that is done, sent or not. It may be called more
// than once.
func (d *drain) abort() {
	d.mu.Lock()
	running := !d.done
	if running {
		d.aborted, d.handover = true, true
	}
	d.mu.Unlock()
	if running {
		d.body.interrupt()
	}
	select {
	case <-d.exited:
	case <-time.After(time.Second):
		// A read the deadline does not reach: it ends when the client
		// sends or goes, and spools nothing once the spool is closed.
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if running && d.err == io.EOF {
		d.body.resume() // the body was whole after all
	}
	if d.closed {
		return
	}
	d.closed = true
	if d.file != nil {
		d.file.Close()
		if d.named {
			os.Remove(d.file.Name())
		}
	}
	d.p.spooled.Add(-d.reserved)
	d.p.buffered.Add(-max(d.memHeld, 0))
	d.mem, d.pending = nil, nil
}
