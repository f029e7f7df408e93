package leanhttp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/pace-cli/pace/runner/internal/rawconn"
)

// bufSize is the size of a connection's read and write buffers: a
// request's head must fit in it to be served by the loop.
const bufSize = 4 << 10

// A connection's states, as Shutdown and the watcher see them.
const (
	stateNew     = iota // accepted, no request read yet
	stateIdle           // waiting for the next request
	stateActive         // reading a request's head, or writing its answer
	stateServing        // in the handler
	stateClosed         // closed by Shutdown
)

// conn is one client connection served by the loop. Its fields are the
// connection goroutine's, but for those under mu.
type conn struct {
	s        *Server
	rwc      net.Conn
	r        connReader
	br       *bufio.Reader
	bw       *bufio.Writer
	ctx      context.Context // what every request's context derives from
	remote   string
	accepted time.Time
	deadline time.Time // the read deadline set on rwc; zero: none

	// A request's head is parsed from a copy: one that is not served
	// here goes to HTTP unread.
	head   bytes.Reader
	headBr *bufio.Reader

	ww      *bufio.Writer // a response's body, held up to preSize (see response)
	cw      chunkWriter   // what ww writes to
	hdr     []byte        // a response's header lines, kept from WriteHeader
	keys    []string
	scratch [64]byte

	// cancel ends the request being served (the client gone, or the
	// answer could not be written). Set before the handler runs.
	cancel context.CancelCauseFunc
	werr   error // the first error writing to the client
	// watch counts the writes to rwc, for WriteIdleTimeout (stall.go).
	watch writeWatch

	mu        sync.Mutex
	state     int
	since     time.Duration // when the handler was called, from s.epoch
	watched   bool          // a goroutine reads rwc to see the client go (watch.go)
	watchDone chan struct{}
}

// connReader reads rwc, first the byte a watcher read (a pipelined
// request's), if any.
type connReader struct {
	rwc     net.Conn
	b       [1]byte
	hasByte bool
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.hasByte && len(p) > 0 {
		p[0] = r.b[0]
		r.hasByte = false
		return 1, nil
	}
	return r.rwc.Read(p)
}

// connWriter writes rwc; an error ends the request being served, as
// net/http's server cancels its context.
type connWriter struct{ c *conn }

func (w connWriter) Write(p []byte) (int, error) {
	w.c.watch.seq.Add(1)
	n, err := w.c.rwc.Write(p)
	w.c.watch.seq.Add(1)
	if err != nil && w.c.werr == nil {
		w.c.werr = err
		if w.c.cancel != nil {
			w.c.cancel(err)
		}
	}
	return n, err
}

func (s *Server) newConn(rwc net.Conn) *conn {
	rwc = rawconn.Wrap(rwc)
	c := &conn{s: s, rwc: rwc, remote: rwc.RemoteAddr().String(), accepted: time.Now()}
	c.r.rwc = rwc
	c.br = bufio.NewReaderSize(&c.r, bufSize)
	c.bw = bufio.NewWriterSize(connWriter{c}, bufSize)
	c.headBr = bufio.NewReaderSize(&c.head, bufSize)
	c.ctx = context.WithValue(context.WithValue(context.Background(), http.ServerContextKey, s.HTTP),
		http.LocalAddrContextKey, rwc.LocalAddr())
	if s.WriteIdleTimeout > 0 {
		c.ctx = context.WithValue(c.ctx, writeWatchKey{}, &c.watch)
	}
	return c
}

// serve serves c's requests until it closes, or until one goes to HTTP.
func (c *conn) serve() {
	handedOff := false
	defer func() {
		c.s.track(c, false)
		if !handedOff {
			c.bw.Flush()
			c.rwc.Close()
		}
	}()
	for first := true; ; first = false {
		n, ok := c.readHead(first)
		if !ok {
			return
		}
		req := c.parse(n)
		if req == nil {
			handedOff = c.handOff()
			return
		}
		c.br.Discard(n)
		if !c.serveRequest(req) {
			return
		}
	}
}

// readHead waits for a request's head and returns its length, now in
// c.br's buffer; n == 0 with ok: the head is not for the loop (too long,
// or cut off by the client).
func (c *conn) readHead(first bool) (n int, ok bool) {
	h := c.s.HTTP
	if first {
		if h.ReadHeaderTimeout > 0 {
			c.setDeadline(c.accepted.Add(h.ReadHeaderTimeout))
		}
	} else if c.br.Buffered() == 0 {
		c.idleDeadline(time.Now())
	}
	// As net/http, a kept connection's next request begins once 4 bytes
	// of it have come; a connection closed before is closed quietly.
	need := 4
	if first {
		need = 1
	}
	if _, err := c.br.Peek(need); err != nil {
		return 0, false
	}
	c.mu.Lock()
	if c.state == stateClosed {
		c.mu.Unlock()
		return 0, false
	}
	c.state = stateActive
	c.mu.Unlock()
	limit := min(c.br.Size(), maxHeaderBytes(h))
	timed := first
	scanned := 0
	for {
		buf, _ := c.br.Peek(c.br.Buffered())
		if n := headEnd(buf, scanned); n > 0 {
			return n, true
		}
		if len(buf) >= limit {
			return 0, true // too long for the loop; HTTP decides
		}
		scanned = max(len(buf)-2, 0)
		if !timed && h.ReadHeaderTimeout > 0 {
			// Came in pieces: the rest within ReadHeaderTimeout, as
			// net/http gives it once a request's first bytes are in.
			c.setDeadline(time.Now().Add(h.ReadHeaderTimeout))
			timed = true
		}
		if _, err := c.br.Peek(len(buf) + 1); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return 0, false // too slow: closed without an answer, as net/http does
			}
			// Cut off (EOF, reset): HTTP answers what came, or not.
			return 0, true
		}
	}
}

// maxHeaderBytes is the largest head HTTP reads (its slack included).
func maxHeaderBytes(h *http.Server) int {
	n := h.MaxHeaderBytes
	if n <= 0 {
		n = http.DefaultMaxHeaderBytes
	}
	return n + 4096
}

// headEnd returns the length of the head at the start of buf, up to and
// including the empty line that ends it (CRLF or a bare LF, as net/http
// reads lines); 0 if it has not come whole. from is where to look: the
// bytes before it were looked at already.
func headEnd(buf []byte, from int) int {
	for i := from; i < len(buf); i++ {
		j := bytes.IndexByte(buf[i:], '\n')
		if j < 0 {
			return 0
		}
		i += j
		switch {
		case i+1 < len(buf) && buf[i+1] == '\n':
			return i + 2
		case i+2 < len(buf) && buf[i+1] == '\r' && buf[i+2] == '\n':
			return i + 3
		}
	}
	return 0
}

// setDeadline sets rwc's read deadline to t (zero: none).
func (c *conn) setDeadline(t time.Time) {
	c.rwc.SetReadDeadline(t)
	c.deadline = t
}

// idleDeadline sets the read deadline for a kept connection's wait for
// its next request: IdleTimeout from now. A deadline less than a second
// short of that is left as it is: moving it is a timer's change, and can
// wake a thread.
func (c *conn) idleDeadline(now time.Time) {
	idle := c.s.HTTP.IdleTimeout
	if idle <= 0 {
		if !c.deadline.IsZero() {
			c.setDeadline(time.Time{})
		}
		return
	}
	slack := min(time.Second, idle/8)
	if c.deadline.IsZero() || c.deadline.Before(now.Add(idle-slack)) {
		c.setDeadline(now.Add(idle))
	}
}

// parse reads the request whose head is the first n bytes of c.br's
// buffer, and returns it if the loop serves it; nil if it goes to HTTP.
func (c *conn) parse(n int) *http.Request {
	if n == 0 {
		return nil
	}
	buf, _ := c.br.Peek(n)
	c.head.Reset(buf)
	c.headBr.Reset(&c.head)
	req, err := http.ReadRequest(c.headBr)
	if err != nil || hostFields(buf) != 1 || !plain(req) {
		return nil
	}
	return req
}

// hostFields counts the Host fields of the head (http.ReadRequest keeps
// the first one's value only).
func hostFields(head []byte) int {
	n := 0
	for len(head) > 0 {
		i := bytes.IndexByte(head, '\n')
		if i < 0 {
			break
		}
		head = head[i+1:]
		if len(head) >= 5 && head[4] == ':' && bytes.EqualFold(head[:4], []byte("host")) {
			n++
		}
	}
	return n
}

// plain reports whether req, whose head has one Host field, is one the
// loop serves: one that net/http's server would take as it is, without a
// body or an upgrade.
func plain(req *http.Request) bool {
	if req.ProtoMajor != 1 || req.ProtoMinor != 1 || len(req.RequestURI) == 0 || req.RequestURI[0] != '/' ||
		req.ContentLength != 0 || len(req.TransferEncoding) != 0 || req.Body != http.NoBody {
		return false
	}
	if !validHost(req.Host) {
		return false
	}
	for k, vv := range req.Header {
		if !validName(k) {
			return false
		}
		switch k {
		case "Upgrade", "Expect", "Content-Length", "Transfer-Encoding":
			// Content-Length: 0 is a body of none; the loop leaves
			// even that to HTTP, which reads it as it says.
			return false
		}
		for _, v := range vv {
			if !validValue(v) {
				return false
			}
		}
	}
	return true
}

// validName reports whether k is a header field name (a token).
func validName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !isToken(k[i]) {
			return false
		}
	}
	return true
}

func isToken(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	switch b {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// validValue reports whether v is a header field value: no control
// characters but tabs (RFC 9110, 5.5).
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// validHost reports whether h is a Host the loop takes: fewer bytes than
// net/http's check allows, never more.
func validHost(h string) bool {
	for i := 0; i < len(h); i++ {
		b := h[i]
		switch {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
			continue
		}
		switch b {
		case '-', '.', '_', '~', ':', '[', ']', '%', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', '@':
			continue
		}
		return false
	}
	return true
}

// handOff gives the connection, and what has been read of it, to HTTP;
// false if HTTP no longer takes connections.
func (c *conn) handOff() bool {
	c.s.track(c, false)
	if !c.deadline.IsZero() {
		c.setDeadline(time.Time{}) // HTTP sets its own
	}
	h := &handedConn{Conn: c.rwc, br: c.br}
	if c.s.WriteIdleTimeout > 0 {
		h.s = c.s
		c.s.trackHanded(h, true)
	}
	if !c.s.handoff.give(h) {
		if h.s != nil {
			c.s.trackHanded(h, false)
		}
		return false
	}
	return true
}

// handedConn is a connection handed to HTTP: its reads begin with the
// bytes the loop had read. With WriteIdleTimeout, its writes are watched
// (stall.go).
type handedConn struct {
	net.Conn
	br    *bufio.Reader
	s     *Server // nil: writes not watched
	watch writeWatch
}

func (h *handedConn) Read(p []byte) (int, error) {
	if h.br != nil {
		if h.br.Buffered() > 0 {
			return h.br.Read(p)
		}
		h.br = nil
	}
	return h.Conn.Read(p)
}

// CloseWrite half-closes the connection, as net/http's server does
// before it closes one whose request it did not read to its end.
func (h *handedConn) CloseWrite() error {
	if cw, ok := h.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// serveRequest calls the handler for req and writes its answer; false if
// the connection is to be closed.
func (c *conn) serveRequest(req *http.Request) bool {
	s := c.s
	req.RemoteAddr = c.remote
	ctx, cancel := context.WithCancelCause(c.ctx)
	defer cancel(nil)
	req = req.WithContext(ctx)
	w := &response{c: c, req: req, header: http.Header{}, contentLength: -1, wantsClose: req.Close}
	c.cw.w = w
	if c.ww == nil {
		c.ww = bufio.NewWriterSize(&c.cw, preSize)
	} else {
		c.ww.Reset(&c.cw)
	}
	now := time.Now()
	c.cancel = cancel
	c.mu.Lock()
	c.state = stateServing
	c.since = now.Sub(s.epoch)
	c.mu.Unlock()
	if !s.watching.Load() {
		s.startWatching()
	}
	ok := c.run(w, req)
	cancel(nil) // as net/http's server does once the handler has returned
	if ok {
		w.finish()
	} else {
		c.bw.Flush() // what reached the connection's buffer, then the connection closes: the answer cut off
	}
	closed := c.unwatch()
	c.cancel = nil
	return ok && !closed && w.reusable() && !s.shutting.Load()
}

// run calls the handler; false if it panicked.
func (c *conn) run(w *response, req *http.Request) (ok bool) {
	defer func() {
		if err := recover(); err != nil {
			if err != http.ErrAbortHandler {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				c.s.logf("http: panic serving %v: %v\n%s", c.remote, err, buf)
			}
			ok = false
		}
	}()
	h := c.s.HTTP.Handler
	if h == nil {
		h = http.DefaultServeMux
	}
	h.ServeHTTP(w, req)
	return true
}

var _ io.Writer = connWriter{}
