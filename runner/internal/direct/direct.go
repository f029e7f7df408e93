// Package direct is an http.RoundTripper for pace's executors that sends
// bodiless requests to plain http:// servers on the caller's goroutine,
// and everything else through an http.Transport.
package direct

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pace-cli/pace/runner/internal/rawconn"
)

// Transport is an http.RoundTripper. Requests that can be sent again
// (GET, HEAD, OPTIONS, TRACE, without a body or an Upgrade) to a plain
// http:// server that no proxy from the environment stands in front of go
// on the caller's goroutine over connections of its own, kept alive: no
// goroutines per connection, no hand-offs between them, which is most of
// what http.Transport costs a request on loopback. Every other request
// goes through the embedded http.Transport (bodies, upgrades, HTTPS,
// HTTP/2, proxies).
//
// The direct path keeps the embedded Transport's DialContext,
// MaxIdleConnsPerHost, ResponseHeaderTimeout and DisableCompression:
// unless that is set, it asks for gzip and decompresses the answer as
// http.Transport does (Response.Uncompressed). It tells a request's
// httptrace.ClientTrace GetConn, GotConn, WroteHeaders, WroteRequest,
// GotFirstResponseByte and Got1xxResponse. The embedded Transport must
// not change once requests have been sent. It is safe for concurrent use.
type Transport struct {
	*http.Transport

	mu    sync.Mutex
	pools map[string]*directPool // by host:port; nil: not for the direct path
}

// directPool holds the idle connections to one host, the latest used
// first.
type directPool struct {
	addr    string
	timeout time.Duration // for the response's headers; 0: none
	max     int
	gzip    bool // ask for gzip and decompress it, as http.Transport does
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	mu      sync.Mutex
	idle    []*directConn
	closed  bool
}

type directConn struct {
	c      net.Conn
	lc     *limitedConn // c, as br reads it
	br     *bufio.Reader
	bw     *bufio.Writer
	head   bytes.Buffer // a request's head, when it is given a header to send
	hb     []byte       // a request's head, as appendHead writes it
	keys   []string     // appendHead's scratch
	reused bool
}

// RoundTrip sends req and returns its answer.
func (u *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if pool := u.direct(req); pool != nil {
		return pool.roundTrip(req)
	}
	return u.Transport.RoundTrip(req)
}

// SendsOnce reports whether req goes the direct path, which sends a
// request a second time only when writing it to a kept connection failed
// (nothing of it reached the server), so that pacehttp need not admit a
// second attempt (pacehttp.Options.Base).
func (u *Transport) SendsOnce(req *http.Request) bool { return u.direct(req) != nil }

// CloseIdleConnections closes the idle connections of both paths.
func (u *Transport) CloseIdleConnections() {
	u.mu.Lock()
	pools := make([]*directPool, 0, len(u.pools))
	for _, p := range u.pools {
		if p != nil {
			pools = append(pools, p)
		}
	}
	u.mu.Unlock()
	for _, p := range pools {
		p.closeIdle()
	}
	u.Transport.CloseIdleConnections()
}

// direct returns the pool req goes through, or nil if it takes the
// http.Transport.
func (u *Transport) direct(req *http.Request) *directPool {
	if req.URL.Scheme != "http" || (req.Body != nil && req.Body != http.NoBody) || req.ContentLength > 0 ||
		len(req.TransferEncoding) > 0 || req.Header.Get("Upgrade") != "" || req.Close {
		return nil
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
	default:
		return nil // not safe to send again on a fresh connection if a kept one was stale
	}
	host := req.URL.Host
	u.mu.Lock()
	defer u.mu.Unlock()
	p, seen := u.pools[host]
	if seen {
		return p
	}
	if u.pools == nil {
		u.pools = map[string]*directPool{}
	}
	if len(u.pools) >= 16 {
		return nil // a few servers are the executors' case; others take the Transport
	}
	t := u.Transport
	h2c := t.Protocols != nil && t.Protocols.UnencryptedHTTP2()
	if prx, err := proxyFor(t, req); err == nil && prx == nil && t.DialContext != nil && !h2c {
		addr := host
		if req.URL.Port() == "" {
			addr = net.JoinHostPort(req.URL.Hostname(), "80")
		}
		p = &directPool{addr: addr, timeout: t.ResponseHeaderTimeout, max: t.MaxIdleConnsPerHost,
			gzip: !t.DisableCompression, dial: t.DialContext}
		if p.max <= 0 {
			p.max = http.DefaultMaxIdleConnsPerHost
		}
	}
	u.pools[host] = p
	return p
}

// proxyFor returns the proxy from t's Proxy for req; nil without one.
func proxyFor(t *http.Transport, req *http.Request) (*url.URL, error) {
	if t.Proxy == nil {
		return nil, nil
	}
	return t.Proxy(&http.Request{URL: req.URL})
}

func (p *directPool) get() *directConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		return c
	}
	return nil
}

// put keeps c for the next request, or closes it.
func (p *directPool) put(c *directConn) {
	p.mu.Lock()
	if !p.closed && len(p.idle) < p.max {
		c.reused = true
		p.idle = append(p.idle, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	c.c.Close()
}

func (p *directPool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		c.c.Close()
	}
}

// aLongTimeAgo is a deadline that makes every read and write fail at
// once: how a cancelled request stops its connection.
var aLongTimeAgo = time.Unix(1, 0)

// errStale is a kept connection the server had closed.
var errStale = errors.New("direct: kept connection closed by the server")

// ErrKeptConnLost is the error (wrapped, with the connection's own) of a
// request written on a kept connection that the server closed, or
// reset, before the first byte of an answer. The server may have read
// the request or not: a server closing an idle connection just as a
// request is written on it looks the same as one that read the request
// and dropped it. So the request is not sent again here; a caller that
// admits a second call may (every request on the direct path can be sent
// again: GET, HEAD, OPTIONS, TRACE, without a body).
var ErrKeptConnLost = errors.New("the server closed a kept connection before answering")

func (p *directPool) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	trace := httptrace.ContextClientTrace(ctx)
	gzipped := p.gzip && req.Method != http.MethodHead && req.Header.Get("Accept-Encoding") == "" && req.Header.Get("Range") == ""
	for attempt := 0; ; attempt++ {
		if trace != nil && trace.GetConn != nil {
			trace.GetConn(p.addr)
		}
		var c *directConn
		if attempt == 0 {
			c = p.get() // a retry goes on a connection of its own: another kept one may be stale too
			for c != nil && (c.br.Buffered() > 0 || rawconn.Closed(c.c)) {
				// Closed by the server while it was idle: found before
				// the request is written, so nothing is sent twice.
				c.c.Close()
				c = p.get()
			}
		}
		if c == nil {
			nc, err := p.dial(ctx, "tcp", p.addr)
			if err != nil {
				return nil, err
			}
			nc = rawconn.Wrap(nc)
			lc := &limitedConn{Conn: nc, left: -1}
			c = &directConn{c: nc, lc: lc, br: bufio.NewReaderSize(lc, 4<<10), bw: bufio.NewWriterSize(nc, 4<<10)}
		}
		if trace != nil && trace.GotConn != nil {
			trace.GotConn(httptrace.GotConnInfo{Conn: c.c, Reused: c.reused, WasIdle: c.reused})
		}
		resp, err := p.send(ctx, trace, c, req, gzipped)
		if err == nil && gzipped {
			ungzip(resp)
		}
		if errors.Is(err, errStale) && attempt == 0 {
			continue // once, on a connection of its own
		}
		return resp, err
	}
}

// send writes req on c and reads the answer's headers; the body is read
// from c, which goes back to the pool once the body has been read to its
// end.
func (p *directPool) send(ctx context.Context, trace *httptrace.ClientTrace, c *directConn, req *http.Request, gzipped bool) (*http.Response, error) {
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(aLongTimeAgo) })
	fail := func(err error) (*http.Response, error) {
		stop()
		c.c.Close()
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, err
	}
	// Request.Write tells the trace WroteHeaders and WroteRequest, as
	// http.Transport's writer does: before the flush.
	if err := c.write(req, gzipped); err != nil {
		return fail(err)
	}
	if err := c.bw.Flush(); err != nil {
		if c.reused {
			err = errStale
		}
		return fail(err)
	}
	if p.timeout > 0 {
		c.c.SetReadDeadline(time.Now().Add(p.timeout))
	}
	c.lc.left = maxResponseHeaderBytes
	if _, err := c.br.Peek(1); err != nil {
		// Not sent again, even on a kept connection that was closed
		// before it answered: the server may have read the request, and
		// a call sent again is a call the rules did not admit. The pool
		// tries again, admitted, if it has retries left; a connection
		// the server closed while idle was found before the write.
		if c.reused && ctx.Err() == nil && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			err = fmt.Errorf("%w: %w", ErrKeptConnLost, err)
		}
		return fail(err)
	}
	if trace != nil && trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
	var resp *http.Response
	for {
		var err error
		resp, err = http.ReadResponse(c.br, req)
		if err != nil {
			return fail(err)
		}
		code := resp.StatusCode
		if code < 100 || code >= 200 || code == http.StatusSwitchingProtocols {
			break
		}
		// 1xx (103 Early Hints): told to the trace, as http.Transport does.
		if trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(code, textproto.MIMEHeader(resp.Header)); err != nil {
				return fail(err)
			}
		}
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fail(errors.New("direct: 101 Switching Protocols to a request that asked for no upgrade"))
	}
	c.lc.left = -1
	if p.timeout > 0 {
		c.c.SetReadDeadline(time.Time{})
	}
	keep := !resp.Close
	if resp.Body == http.NoBody {
		p.done(c, stop, keep)
		return resp, nil
	}
	resp.Body = &directBody{rc: resp.Body, p: p, c: c, ctx: ctx, stop: stop, keep: keep}
	return resp, nil
}

// acceptGzip ends a request's headers that asks for gzip, as
// http.Transport writes it: after the request's own headers.
var acceptGzip = []byte("Accept-Encoding: gzip\r\n\r\n")

// write writes req, bodiless, to c's buffer; with gzipped, with an
// Accept-Encoding: gzip header that the caller's request does not hold
// (its header may be shared with other requests).
func (c *directConn) write(req *http.Request, gzipped bool) error {
	trace := httptrace.ContextClientTrace(req.Context())
	if b, ok := appendHead(c.hb[:0], &c.keys, req, trace); ok {
		c.hb = b
		if gzipped {
			c.bw.Write(b[:len(b)-2])
			c.bw.Write(acceptGzip)
		} else {
			c.bw.Write(b)
		}
		// As Request.Write tells them.
		if trace != nil && trace.WroteHeaders != nil {
			trace.WroteHeaders()
		}
		if trace != nil && trace.WroteRequest != nil {
			trace.WroteRequest(httptrace.WroteRequestInfo{})
		}
		return nil
	}
	if !gzipped {
		return req.Write(c.bw)
	}
	c.head.Reset()
	if err := req.Write(&c.head); err != nil {
		return err
	}
	b := c.head.Bytes()
	if !bytes.HasSuffix(b, []byte("\r\n\r\n")) { // a bodiless request's headers end it
		return errors.New("direct: request does not end with its headers")
	}
	c.bw.Write(b[:len(b)-2])
	_, err := c.bw.Write(acceptGzip)
	return err
}

// ungzip makes resp's body the decompressed one if the server sent it
// gzipped, as http.Transport does when it asked for gzip itself.
func ungzip(resp *http.Response) {
	if resp.Body == http.NoBody || !strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		return
	}
	resp.Body = &gzipBody{body: resp.Body}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
}

// gzipBody decompresses a body, starting at its first Read.
type gzipBody struct {
	body io.ReadCloser
	zr   *gzip.Reader
	err  error // sticky
}

func (g *gzipBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.zr == nil {
		if g.zr, g.err = gzip.NewReader(g.body); g.err != nil {
			if g.err == io.EOF {
				g.err = io.ErrUnexpectedEOF
			}
			return 0, g.err
		}
	}
	n, err := g.zr.Read(p)
	if err != nil {
		g.err = err
	}
	return n, err
}

func (g *gzipBody) Close() error { return g.body.Close() }

// done ends a request on c: back to the pool if the answer was read to
// its end, the server keeps it, and the request was not cancelled.
func (p *directPool) done(c *directConn, stop func() bool, keep bool) {
	if stop() && keep {
		p.put(c)
		return
	}
	c.c.Close()
}

// directBody is an answer's body read from its connection.
type directBody struct {
	rc   io.ReadCloser
	p    *directPool
	c    *directConn
	ctx  context.Context
	stop func() bool
	keep bool
	over bool
}

func (b *directBody) Read(buf []byte) (int, error) {
	if b.over {
		return 0, io.EOF
	}
	n, err := b.rc.Read(buf)
	if err == io.EOF {
		b.over = true
		b.p.done(b.c, b.stop, b.keep)
	} else if err != nil && b.ctx.Err() != nil {
		err = context.Cause(b.ctx) // the past deadline that stopped the read says nothing
	}
	return n, err
}

// Close ends the answer; one not read to its end closes the connection
// (reading the rest, as net/http's own body does, could take forever).
func (b *directBody) Close() error {
	if !b.over {
		b.over = true
		b.p.done(b.c, b.stop, false)
	}
	return nil
}

// maxResponseHeaderBytes bounds the server's response headers (and any
// 1xx before them), as http.Transport's default does.
const maxResponseHeaderBytes = 10 << 20

var errHeadersTooLarge = errors.New("direct: the server's response headers exceed 10 MiB")

// limitedConn is a connection whose reads stop with errHeadersTooLarge
// once left bytes have been read; left < 0: no limit.
type limitedConn struct {
	net.Conn
	left int64
}

func (c *limitedConn) Read(p []byte) (int, error) {
	if c.left < 0 {
		return c.Conn.Read(p)
	}
	if c.left == 0 {
		return 0, errHeadersTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.Conn.Read(p)
	c.left -= int64(n)
	return n, err
}
