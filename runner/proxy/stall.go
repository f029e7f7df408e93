package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Clients that stall.
//
// A request holds its -j slot, and its admission, until its answer has
// been copied: a client that stops sending its body, or stops reading
// its answer, would hold them for as long as it likes, and a few such
// clients would starve every other. With Options.ClientTimeout:
//   - each read of a request's body waits at most that long for a byte
//     (a connection's read deadline, set before the read and cleared
//     after it): a body that makes no progress for that long is
//     abandoned, its upstream request cancelled, its slot given back at
//     once, and its client answered 408 Request Timeout, the connection
//     closed; one still waiting for its admission spends nothing. A body
//     that comes slowly but steadily is never cut: each byte restarts the
//     wait.
//   - NewServer's server fails a write to a client that takes none of it
//     for that long (leanhttp's WriteIdleTimeout; a reader's progress is
//     seen in the kernel's steps, a segment at least): the answer is cut
//     off, the connection closed, the slot given back.
// A request admitted is told as failed (errBodyStalled, errAnswerStalled).
// Only the proxy's own reads and writes are bounded: an upstream slow to
// read a body or to answer is the upstream's (--timeout), and an idle
// websocket is not a stalled one.

// DefaultClientTimeout is the ClientTimeout of pace proxy: nginx's
// client_body_timeout and send_timeout.
const DefaultClientTimeout = time.Minute

// Errors of a request whose client stalled, in its Result (with the
// time it was given: bodyStalled, answerStalled).
var (
	errBodyStalled   = errors.New("the client stopped sending its request body")
	errAnswerStalled = errors.New("the client stopped reading its answer")
)

// bodyStalled is the error of a request whose body stalled.
func (p *Proxy) bodyStalled() error {
	return fmt.Errorf("%w: no byte of it came for %s", errBodyStalled, p.opts.ClientTimeout)
}

// answerStalled is the error of a request whose client took none of its
// answer.
func (p *Proxy) answerStalled() error {
	return fmt.Errorf("%w: it took no byte of it for %s", errAnswerStalled, p.opts.ClientTimeout)
}

// aLongTimeAgo is a deadline that makes a read return at once.
var aLongTimeAgo = time.Unix(1, 0)

// clientBody is a request's body as its client sends it: each read
// waits at most idle for a byte (0: as long as it takes), through the
// connection's read deadline (rc). Reads come one at a time.
type clientBody struct {
	src  io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
	// stalled is set once a read has waited idle in vain; reading is when
	// the read in progress began (since epoch, +1), 0 if none.
	stalled atomic.Bool
	reading atomic.Int64

	mu      sync.Mutex
	stopped bool // interrupt: reads fail at once
}

// epoch is the origin of clientBody.reading (monotonic).
var epoch = time.Now()

// isStalled reports whether the body stalled: a read waited idle in
// vain, or waits now past its deadline. The second is what the request
// sees first: net/http cancels the request's context as the read fails,
// before the read returns to say why.
func (b *clientBody) isStalled() bool {
	if b.stalled.Load() {
		return true
	}
	r := b.reading.Load()
	return r != 0 && b.idle > 0 && time.Since(epoch)-time.Duration(r-1) >= b.idle
}

func (b *clientBody) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return b.src.Read(p)
	}
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return 0, errDrainStopped
	}
	if b.idle > 0 {
		now := time.Now()
		b.reading.Store(int64(now.Sub(epoch)) + 1)
		b.rc.SetReadDeadline(now.Add(b.idle))
	}
	b.mu.Unlock()
	n, err := b.src.Read(p)
	if b.idle == 0 {
		return n, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.stopped:
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		// Stalled: the connection reads nothing more, so that net/http,
		// which reads what is left of a short body once the handler
		// returns, closes it at once rather than wait for the client.
		b.stalled.Store(true)
		b.stopped = true
		b.rc.SetReadDeadline(aLongTimeAgo)
		err = errBodyStalled
	default:
		// No deadline left behind: net/http's own read of the
		// connection, once the body is read, must wait as long as it
		// takes.
		b.rc.SetReadDeadline(time.Time{})
	}
	b.reading.Store(0) // after stalled: isStalled sees one or the other
	return n, err
}

func (b *clientBody) Close() error { return b.src.Close() }

// interrupt makes the read in progress, if any, and every later one fail
// at once.
func (b *clientBody) interrupt() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = true
	b.rc.SetReadDeadline(aLongTimeAgo)
}

// resume undoes interrupt: the body had been read whole after all, and
// the connection may serve its next request.
func (b *clientBody) resume() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopped = false
	b.rc.SetReadDeadline(time.Time{})
}

// stalledBody answers a request whose body stalled: 408, the connection
// closed. sent says whether the request had gone upstream.
func (p *Proxy) stalledBody(w http.ResponseWriter, r *http.Request, sent bool) {
	what := "it was not sent upstream"
	if sent {
		what = "its upstream request was cancelled"
	}
	w.Header().Set("Connection", "close")
	plain(w, http.StatusRequestTimeout, fmt.Sprintf("pace proxy: no byte of the request's body came for %s (--client-timeout); %s",
		p.opts.ClientTimeout, what))
	if p.opts.Log != nil {
		p.opts.Log(fmt.Sprintf("%s %s: %s", r.Method, p.red.URL(r.URL), p.bodyStalled()))
	}
}
