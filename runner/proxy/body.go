package proxy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/pace-cli/pace/runner/internal/leanhttp"
	"github.com/pace-cli/pace/runner/internal/rawconn"
)

// errHungUp cancels the wait of a request whose client closed its
// connection before its body was read.
var errHungUp = errors.New("pace proxy: the client closed its connection while its request waited")

// Reading a small request body before the wait.
//
// net/http's server cancels a request's context when its client goes
// only through a read of the connection that it starts once the handler
// has read the request's body to its end (bodiless requests: at once).
// A request whose body is still unread while it waits for a slot or the
// rules would not see its client go: it would be admitted, and sent, for
// nobody. So a small body is read into memory before the wait: net/http
// then watches the connection, and a client gone cancels the wait as it
// does for a GET.
//
// Not read before the wait:
//   - a body longer than maxBufferedBody (Content-Length, or a chunked
//     body that has not ended within it): it streams upstream as it
//     comes, so that memory stays bounded whatever the upload;
//   - a request with Expect: 100-continue: reading its body would answer
//     100 Continue before the admission, and the client would send a body
//     the upstream may never take;
//   - a body past bufferedBodiesBudget, the bytes all waiting requests
//     may hold at once.
// net/http does not watch their connections while they wait (it would
// have to read the body), so the proxy looks at the socket itself every
// hangupLook (watchHangup): a client that closed its connection or reset
// it is seen behind the body's unread bytes, and its wait ends as a GET's
// does, with nothing spent. A close still in the client's kernel, behind
// body bytes our receive window has no room for, comes through because
// the body is drained into a spool while the request waits (spool.go).

// hangupLook is how often watchHangup looks at a waiting request's
// connection.
const hangupLook = 20 * time.Millisecond

// maxBufferedBody is the longest request body read before the wait.
const maxBufferedBody = 64 << 10

// bufferedBodiesBudget bounds the bytes of the bodies read before their
// wait, held at once by all requests.
const bufferedBodiesBudget = 64 << 20

// readBody reads r's body into memory if it is small enough (see above)
// and puts the copy in its place. It returns the bytes it holds for r
// (to give back with unreserve once r is done), whether r's body is now
// whole in memory (or r has none), and the error of a body that could
// not be read: the client gone, or a malformed body. A chunked body
// longer than maxBufferedBody is kept as its first bytes followed by the
// rest, unread; its bytes are held until r is done.
func (p *Proxy) readBody(r *http.Request) (held int64, whole bool, err error) {
	if r.Body == nil || r.Body == http.NoBody {
		return 0, true, nil
	}
	n := r.ContentLength
	if n > maxBufferedBody || expectsContinue(r) {
		return 0, false, nil
	}
	if n < 0 { // chunked: up to maxBufferedBody
		n = maxBufferedBody
	}
	if p.buffered.Add(n) > bufferedBodiesBudget {
		p.buffered.Add(-n)
		return 0, false, nil
	}
	size := n + 1 // room for the read that sees the end
	if r.ContentLength < 0 {
		size = 512 // chunked bodies are mostly short: grow as they come
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, rerr := r.Body.Read(buf[len(buf):min(cap(buf), maxBufferedBody+1)])
		buf = buf[:len(buf)+m]
		if rerr == io.EOF {
			r.Body = io.NopCloser(bytes.NewReader(buf))
			return n, true, nil
		}
		if rerr != nil {
			return n, false, rerr
		}
		if int64(len(buf)) > maxBufferedBody {
			// A chunked body longer than the bound: its first bytes, then
			// the rest as it comes.
			r.Body = prefixedBody{io.MultiReader(bytes.NewReader(buf), r.Body), r.Body}
			return n, false, nil
		}
	}
}

// unreserve gives back the bytes readBody held.
func (p *Proxy) unreserve(held int64) {
	if held > 0 {
		p.buffered.Add(-held)
	}
}

// watchHangup looks at the connection of rq, a request whose body is
// not read yet, every hangupLook while it waits: a client gone (HungUp)
// cancels the wait. It returns the function that stops looking. Only
// requests the server's loop handed to net/http have a connection to look
// at (leanhttp.ClientConn); for others it does nothing.
func watchHangup(r *http.Request, rq *request) (stop func()) {
	c := leanhttp.ClientConn(r.Context())
	if c == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(hangupLook)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if rq.state.Load() != stateWaiting {
				return
			}
			if rawconn.HungUp(c) {
				rq.cancel(errHungUp)
				return
			}
		}
	}()
	return func() { close(done) }
}

// expectsContinue reports whether r asks for 100 Continue before its
// body is sent.
func expectsContinue(r *http.Request) bool {
	for _, v := range r.Header["Expect"] {
		if strings.EqualFold(strings.TrimSpace(v), "100-continue") {
			return true
		}
	}
	return false
}

// prefixedBody is a body partly read: the bytes read, then the rest.
type prefixedBody struct {
	io.Reader
	io.Closer
}

// clientGone reports whether err, from reading a request's body, says the
// client went away (the connection closed or reset mid-body), not that
// it sent a malformed one.
func clientGone(err error) bool {
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.As(err, &ne)
}
