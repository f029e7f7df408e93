package proxy

import (
	"context"
	"io"
	"net/http/httptrace"
	"sync"
	"time"
)

// An upstream that takes none of a request's body.
//
// http.Transport's ResponseHeaderTimeout (--timeout) counts from the end
// of the request's body: an upstream that stops reading the body (its
// receive window full, and nothing read) blocks the write for good, and
// the request holds its slot however long the timeout, and on after its
// client has gone (net/http sees a client go only once the body has been
// read). So with Options.Timeout a request's body is watched while it is
// sent: once the transport has taken no byte of it for Timeout without
// waiting on the client (a read in progress is the client's time, which
// ClientTimeout bounds), the upstream took none, and the request is
// cancelled and answered 504. The watch ends when the request has been
// written (then ResponseHeaderTimeout counts) or its round trip has
// returned.

// errUpstreamSlow cancels a request whose upstream took none of its body
// for Options.Timeout. It is a timeout (net.Error), as the transport's own.
var errUpstreamSlow error = upstreamSlow{}

type upstreamSlow struct{}

func (upstreamSlow) Error() string   { return "the upstream took no byte of the request's body in time" }
func (upstreamSlow) Timeout() bool   { return true }
func (upstreamSlow) Temporary() bool { return false }

// sendWatch is a request's body as the transport reads it to send it
// upstream, watched (see above).
type sendWatch struct {
	body   io.ReadCloser
	idle   time.Duration
	first  time.Duration // until the first read
	cancel context.CancelCauseFunc
	trace  httptrace.ClientTrace

	mu    sync.Mutex
	timer *time.Timer // nil until the request is admitted
	done  bool
}

// watchSend returns body, watched, for a request cancelled with cancel;
// with expect (Expect: 100-continue), the transport waits for the
// upstream's 100 Continue before it reads the body, up to
// expectContinueTimeout, which upstreams that never send one take.
func watchSend(body io.ReadCloser, idle time.Duration, cancel context.CancelCauseFunc, expect bool) *sendWatch {
	w := &sendWatch{body: body, idle: idle, first: idle, cancel: cancel}
	if expect {
		w.first += expectContinueTimeout
	}
	w.trace.WroteRequest = func(httptrace.WroteRequestInfo) { w.end() }
	return w
}

func (w *sendWatch) Read(p []byte) (int, error) {
	w.mu.Lock()
	if w.timer != nil {
		w.timer.Stop() // the client's time, not the upstream's
	}
	w.mu.Unlock()
	n, err := w.body.Read(p)
	w.mu.Lock()
	if w.timer != nil && !w.done {
		w.timer.Reset(w.idle)
	}
	w.mu.Unlock()
	return n, err
}

func (w *sendWatch) Close() error { return w.body.Close() }

// start starts the watch, once the request is admitted: the time to
// reach the upstream and send the head counts as the upstream's.
func (w *sendWatch) start() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done && w.timer == nil {
		w.timer = time.AfterFunc(w.first, w.fire)
	}
}

// end ends the watch: the request is written, or its round trip over.
func (w *sendWatch) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

func (w *sendWatch) fire() {
	w.mu.Lock()
	done := w.done
	w.mu.Unlock()
	if !done {
		w.cancel(errUpstreamSlow)
	}
}
