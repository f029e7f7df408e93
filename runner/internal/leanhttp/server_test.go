package leanhttp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Tests of the loop against net/http's own server: the same handler
// behind both, the same bytes sent, the same answer expected (its head
// byte for byte but for Date, its body, trailers, and whether the
// connection is kept), and each request the loop serves served by it.

// server is a server under test: the loop, or net/http's alone.
type server struct {
	addr string
	lean *Server
	http *http.Server

	mu      sync.Mutex
	log     strings.Builder // the server's ErrorLog
	byLoop  atomic.Int64    // requests the loop served
	byHTTP  atomic.Int64    // requests net/http served
	lastCtx context.Context
}

// serve starts h behind the loop (lean) or net/http's server alone;
// tune, if set, changes the http.Server first.
func serve(t testing.TB, h http.Handler, lean bool, tune ...func(*http.Server)) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: ln.Addr().String()}
	s.http = &http.Server{ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 64 << 10,
		ErrorLog: log.New(logWriter{s}, "", 0),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := w.(*response); ok {
				s.byLoop.Add(1)
			} else {
				s.byHTTP.Add(1)
			}
			s.mu.Lock()
			s.lastCtx = r.Context()
			s.mu.Unlock()
			h.ServeHTTP(w, r)
		})}
	for _, f := range tune {
		f(s.http)
	}
	if lean {
		s.lean = &Server{HTTP: s.http}
		// Initialised here, not in Serve's goroutine: tests read its
		// maps (under its lock) as soon as serve returns.
		s.lean.init()
		go s.lean.Serve(ln)
		t.Cleanup(func() { s.lean.Close() })
	} else {
		go s.http.Serve(ln)
		t.Cleanup(func() { s.http.Close() })
	}
	return s
}

type logWriter struct{ s *server }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.log.Write(p)
}

// outcome is what a client saw of one exchange.
type outcome struct {
	Head    string // status line and header fields, Date's value masked
	Body    string
	Trailer http.Header
	Err     string // reading the answer failed: how
	Kept    bool   // the connection served a request after it
}

var dateField = regexp.MustCompile(`(?m)^Date: [^\r\n]*`)

// exchange sends raw on a fresh connection to addr, reads the answer,
// then asks for /again on the same connection to see whether it was
// kept.
func exchange(t *testing.T, addr, raw string) outcome {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		return outcome{Err: "write: " + err.Error()}
	}
	var rec bytes.Buffer
	br := bufio.NewReader(io.TeeReader(c, &rec))
	method, _, _ := strings.Cut(raw, " ")
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		return outcome{Err: "head: " + err.Error()}
	}
	var o outcome
	head, _, _ := strings.Cut(rec.String(), "\r\n\r\n")
	o.Head = dateField.ReplaceAllString(head, "Date: (date)")
	b, err := io.ReadAll(resp.Body)
	o.Body, o.Trailer = string(b), resp.Trailer
	if err != nil {
		o.Err = "body: " + err.Error()
		return o
	}
	if resp.Close {
		return o
	}
	io.WriteString(c, "GET /again HTTP/1.1\r\nHost: a\r\n\r\n")
	if r2, err := http.ReadResponse(br, nil); err == nil {
		io.Copy(io.Discard, r2.Body)
		o.Kept = r2.StatusCode == http.StatusOK
	}
	return o
}

// shapes answers each path in a way of its own: the answers the tests
// compare.
func shapes(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	switch r.URL.Path {
	case "/again":
		io.WriteString(w, "again\n")
	case "/small":
		h.Set("Content-Type", "text/plain")
		io.WriteString(w, "hello\n")
	case "/sniffed":
		io.WriteString(w, "<html><body>hi</body></html>")
	case "/encoded":
		h.Set("Content-Encoding", "gzip")
		io.WriteString(w, "not really gzip")
	case "/empty":
	case "/status":
		w.WriteHeader(http.StatusTeapot)
	case "/unknown-status":
		w.WriteHeader(599)
		io.WriteString(w, "odd")
	case "/length":
		h.Set("Content-Length", "5")
		io.WriteString(w, "12345")
	case "/length-short":
		h.Set("Content-Length", "10")
		io.WriteString(w, "12345")
	case "/length-long":
		h.Set("Content-Length", "3")
		_, err := io.WriteString(w, "12345")
		io.WriteString(w, fmt.Sprint(err))
	case "/length-bad":
		h.Set("Content-Length", "-3")
		io.WriteString(w, "abc")
	case "/big":
		w.Write(bytes.Repeat([]byte("0123456789abcdef"), 1000))
	case "/big-in-pieces":
		for i := range 300 {
			fmt.Fprintf(w, "line %d\n", i)
		}
	case "/flushed":
		io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, "second\n")
	case "/flushed-empty":
		w.(http.Flusher).Flush()
	case "/controller":
		io.WriteString(w, "x")
		if err := http.NewResponseController(w).Flush(); err != nil {
			panic(err)
		}
	case "/early-hints":
		h.Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		h.Del("Link")
		io.WriteString(w, "after hints")
	case "/no-content":
		h.Set("Content-Length", "3")
		h.Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusNoContent)
		_, err := io.WriteString(w, "abc")
		h.Set("X-Late", fmt.Sprint(err)) // not sent
	case "/not-modified":
		h.Set("Content-Type", "text/plain")
		h.Set("Etag", `"v1"`)
		w.WriteHeader(http.StatusNotModified)
	case "/trailers":
		h.Set("Trailer", "X-Sum, Content-Length")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "body")
		h.Set("X-Sum", "42")
		h.Set(http.TrailerPrefix+"X-Extra", "yes")
	case "/trailer-prefix-only":
		io.WriteString(w, "body")
		h.Set(http.TrailerPrefix+"X-Extra", "yes")
	case "/identity":
		h.Set("Transfer-Encoding", "identity")
		io.WriteString(w, "until close")
	case "/te-chunked":
		h.Set("Transfer-Encoding", "chunked")
		io.WriteString(w, "chunked by the handler's say")
	case "/te-and-length":
		h.Set("Transfer-Encoding", "chunked")
		h.Set("Content-Length", "4")
		io.WriteString(w, "abcd")
	case "/close":
		h.Set("Connection", "close")
		io.WriteString(w, "bye")
	case "/weird-headers":
		h["bad name"] = []string{"x"}
		h.Set("X-Multi", "a\r\nInjected: yes")
		h.Add("X-Two", "1")
		h.Add("X-Two", " 2 ")
		h["X-Nil"] = nil
		h["X-Empty"] = []string{""}
		io.WriteString(w, "ok")
	case "/no-type":
		h["Content-Type"] = nil
		io.WriteString(w, "<html>")
	case "/abort":
		h.Set("Content-Length", "100")
		io.WriteString(w, "part")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	case "/abort-chunked":
		io.WriteString(w, "part")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	case "/abort-before":
		panic(http.ErrAbortHandler)
	case "/echo":
		fmt.Fprintf(w, "%s %s %s host=%s close=%v remote=%v ctxserver=%v\n", r.Method, r.RequestURI, r.Proto, r.Host, r.Close,
			r.RemoteAddr != "", r.Context().Value(http.ServerContextKey) != nil)
		for _, k := range []string{"Accept", "Connection", "X-A", "Host"} {
			fmt.Fprintf(w, "%s=%q\n", k, r.Header[k])
		}
	default:
		http.NotFound(w, r)
	}
}

// paths are shapes' paths, each compared for GET and HEAD.
var paths = []string{"/small", "/sniffed", "/encoded", "/empty", "/status", "/unknown-status", "/length", "/length-short",
	"/length-long", "/length-bad", "/big", "/big-in-pieces", "/flushed", "/flushed-empty", "/controller", "/early-hints",
	"/no-content", "/not-modified", "/trailers", "/trailer-prefix-only", "/identity", "/te-chunked", "/te-and-length",
	"/close", "/weird-headers", "/no-type", "/abort", "/abort-chunked", "/abort-before", "/echo", "/missing"}

func TestSameAnswersAsNetHTTP(t *testing.T) {
	std := serve(t, http.HandlerFunc(shapes), false)
	lean := serve(t, http.HandlerFunc(shapes), true)
	for _, method := range []string{"GET", "HEAD", "DELETE"} {
		for _, path := range paths {
			for _, extra := range []string{"", "Connection: close\r\n", "Connection: keep-alive\r\n"} {
				raw := method + " " + path + " HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nX-A: 1\r\n" + extra + "\r\n"
				before := lean.byLoop.Load()
				want, got := exchange(t, std.addr, raw), exchange(t, lean.addr, raw)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%q:\nloop     %+v\nnet/http %+v", raw, got, want)
				}
				if lean.byLoop.Load() == before {
					t.Errorf("%q: not served by the loop", raw)
				}
			}
		}
	}
	if lean.byHTTP.Load() != 0 {
		t.Errorf("%d plain requests went to net/http", lean.byHTTP.Load())
	}
}

// Requests the loop does not serve go to net/http, which answers them as
// it answers them alone, and serves the connection from then on.
func TestHandsOffWhatItDoesNotServe(t *testing.T) {
	std := serve(t, http.HandlerFunc(shapes), false)
	lean := serve(t, http.HandlerFunc(shapes), true)
	long := "X-Long: " + strings.Repeat("l", 8<<10) + "\r\n"
	for _, raw := range []string{
		"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
		"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"PUT /echo HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi",
		"GET /echo HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
		"GET /echo HTTP/1.0\r\nHost: a\r\n\r\n",
		"GET /echo HTTP/1.0\r\n\r\n",
		"GET /echo HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		"GET http://a/echo HTTP/1.1\r\nHost: a\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
		"CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET /echo HTTP/1.1\r\nhost: a\r\nHOST: a\r\n\r\n",
		"GET /echo HTTP/1.1\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: a b\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: a/b\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: a\r\nX-A: bell\x07\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: a\r\nX-A: del\x7f\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: a\r\nX-A: nul\x00\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: a\r\n X-Folded: x\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: a\r\n" + long + "\r\n",
		"GET /echo HTTP/1.1\r\nHost: a\r\nX-Huge: " + strings.Repeat("h", 80<<10) + "\r\n\r\n",
		"GET /echo HTTP/2.0\r\nHost: a\r\n\r\n",
		"GET /echo HTTP/9.9\r\nHost: a\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"GARBAGE\r\n\r\n",
		"\r\n\r\n",
		"\n\n",
		"GET /echo HTTP/1.1\r\nHost: a\r\nContent-Length: -5\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
		"GET /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
		"GET  /echo HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /ec ho HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n",
		"G\x00T /echo HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		before := lean.byLoop.Load()
		want, got := exchange(t, std.addr, raw), exchange(t, lean.addr, raw)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%.80q:\nloop     %+v\nnet/http %+v", raw, got, want)
		}
		if lean.byLoop.Load() != before {
			t.Errorf("%.80q: served by the loop", raw)
		}
	}
	// Served by the loop: a bare LF ends lines as net/http reads them.
	for _, raw := range []string{
		"GET /echo HTTP/1.1\nHost: a\n\n",
		"GET /echo HTTP/1.1\r\nHost: a\n\r\n",
		"GET /echo?q=1&r=%20 HTTP/1.1\r\nHost: [::1]:80\r\nX-A: \t tabs and spaces \t\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n continued\r\n\r\n", // obs-fold, joined as net/http joins it
	} {
		before := lean.byLoop.Load()
		want, got := exchange(t, std.addr, raw), exchange(t, lean.addr, raw)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q:\nloop     %+v\nnet/http %+v", raw, got, want)
		}
		if lean.byLoop.Load() == before {
			t.Errorf("%q: not served by the loop", raw)
		}
	}
}

// Requests sent together (pipelined) are answered in order, the loop's
// and net/http's mixed on one connection once one goes to net/http.
func TestPipelinedRequests(t *testing.T) {
	for _, lean := range []bool{false, true} {
		s := serve(t, http.HandlerFunc(shapes), lean)
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET /small HTTP/1.1\r\nHost: a\r\n\r\nGET /length HTTP/1.1\r\nHost: a\r\n\r\n"+
			"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhiGET /small HTTP/1.1\r\nHost: a\r\n\r\n")
		br := bufio.NewReader(c)
		var got []string
		for range 4 {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			got = append(got, strings.SplitN(string(b), " ", 2)[0])
		}
		if want := "[hello\n 12345 POST hello\n]"; fmt.Sprint(got) != want {
			t.Errorf("lean %v: answers %q, want %q", lean, got, want)
		}
		if lean && (s.byLoop.Load() != 2 || s.byHTTP.Load() != 2) {
			t.Errorf("loop served %d, net/http %d; want 2 and 2", s.byLoop.Load(), s.byHTTP.Load())
		}
	}
}

// waitFor waits up to 10s for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: not %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A client that closes its connection while its request is in the
// handler cancels the request's context, whether it leaves at once or
// after the loop began watching.
func TestClientGoneCancelsTheRequest(t *testing.T) {
	for _, after := range []time.Duration{0, 4 * watchAfter, 50 * watchAfter} {
		cause := make(chan error, 1)
		entered := make(chan struct{}, 1)
		s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered <- struct{}{}
			select {
			case <-r.Context().Done():
				cause <- context.Cause(r.Context())
			case <-time.After(10 * time.Second):
				cause <- nil
			}
		}), true)
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET /wait HTTP/1.1\r\nHost: a\r\n\r\n")
		<-entered
		time.Sleep(after)
		c.Close()
		if err := <-cause; !errors.Is(err, errClientGone) {
			t.Errorf("client gone %v after: the request's context ended with %v, want errClientGone", after, err)
		}
	}
}

// A request pipelined behind a slow one is served once the slow one
// ends, though the watcher read its first byte.
func TestPipelinedBehindASlowRequest(t *testing.T) {
	release := make(chan struct{})
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, r.URL.Path)
	}), true)
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	waitFor(t, "watching the slow request", func() bool {
		s.lean.mu.Lock()
		defer s.lean.mu.Unlock()
		for cn := range s.lean.conns {
			cn.mu.Lock()
			w := cn.watched
			cn.mu.Unlock()
			if w {
				return true
			}
		}
		return false
	})
	io.WriteString(c, "GET /next HTTP/1.1\r\nHost: a\r\n\r\n")
	time.Sleep(20 * time.Millisecond) // the watcher reads the next request's first byte
	close(release)
	br := bufio.NewReader(c)
	for _, want := range []string{"/slow", "/next"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != want {
			t.Errorf("answer %q, want %q", b, want)
		}
	}
}

// A client that sends its head a byte at a time, or nothing, is cut off
// after ReadHeaderTimeout; a kept connection with no request, after
// IdleTimeout.
func TestTimeouts(t *testing.T) {
	s := serve(t, http.HandlerFunc(shapes), true, func(h *http.Server) {
		h.ReadHeaderTimeout = 200 * time.Millisecond
		h.IdleTimeout = 300 * time.Millisecond
	})
	cut := func(what string, send func(c net.Conn)) {
		t.Helper()
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		go send(c)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.ReadAll(c)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: cut off after %v, want well under 5s", what, d)
		}
	}
	cut("slowloris", func(c net.Conn) {
		io.WriteString(c, "GET /small HTTP/1.1\r\n")
		for range 200 {
			if _, err := io.WriteString(c, "X"); err != nil {
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
	})
	cut("silent", func(net.Conn) {})
	cut("idle after a request", func(c net.Conn) { io.WriteString(c, "GET /small HTTP/1.1\r\nHost: a\r\n\r\n") })
	if got := exchange(t, s.addr, "GET /small HTTP/1.1\r\nHost: a\r\n\r\n"); got.Body != "hello\n" {
		t.Errorf("after the timeouts: %+v", got)
	}
}

// A handler's panic closes the connection and is logged; the server
// goes on. http.ErrAbortHandler is not logged.
func TestPanics(t *testing.T) {
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic("boom")
		case "/abort":
			panic(http.ErrAbortHandler)
		}
		shapes(w, r)
	}), true)
	for _, path := range []string{"/panic", "/abort"} {
		if got := exchange(t, s.addr, "GET "+path+" HTTP/1.1\r\nHost: a\r\n\r\n"); got.Err != "head: unexpected EOF" {
			t.Errorf("%s: %+v, want the connection closed without an answer", path, got)
		}
	}
	s.mu.Lock()
	logged := s.log.String()
	s.mu.Unlock()
	if !strings.Contains(logged, "panic serving") || !strings.Contains(logged, "boom") || strings.Count(logged, "panic serving") != 1 {
		t.Errorf("log %q, want the one panic", logged)
	}
	if got := exchange(t, s.addr, "GET /small HTTP/1.1\r\nHost: a\r\n\r\n"); got.Body != "hello\n" || !got.Kept {
		t.Errorf("after the panics: %+v", got)
	}
}

// A client gone while the answer streams: the writes fail and the
// request's context is cancelled.
func TestWriteToAClientGone(t *testing.T) {
	done := make(chan error, 1)
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("z"), 32<<10)
		for range 10000 {
			if _, err := w.Write(chunk); err != nil {
				break
			}
		}
		<-r.Context().Done()
		done <- context.Cause(r.Context())
	}), true)
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET /stream HTTP/1.1\r\nHost: a\r\n\r\n")
	buf := make([]byte, 64<<10)
	io.ReadFull(c, buf)
	c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the context ended without a cause")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler still writes 10s after its client left")
	}
}

// Shutdown closes idle connections at once, lets the request in a handler
// finish (its answer saying Connection: close), then returns; Serve
// returns ErrServerClosed.
func TestShutdown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		io.WriteString(w, "done")
	}), true)
	idle, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET /quick HTTP/1.1\r\nHost: a\r\n\r\n")
	ibr := bufio.NewReader(idle)
	if resp, err := http.ReadResponse(ibr, nil); err != nil {
		t.Fatal(err)
	} else {
		io.Copy(io.Discard, resp.Body)
	}
	busy, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busy.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	<-entered
	shut := make(chan error, 1)
	go func() { shut <- s.lean.Shutdown(context.Background()) }()
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := ibr.ReadByte(); err != io.EOF {
		t.Errorf("idle connection: %v, want closed (EOF)", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request in its handler", err)
	default:
	}
	close(release)
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "done" || !resp.Close {
		t.Errorf("the request in flight: %q, close %v; want done, closed", b, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := s.lean.Serve(mustListen(t)); err != ErrServerClosed {
		t.Errorf("Serve after Shutdown: %v, want ErrServerClosed", err)
	}
}

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// Close closes every connection at once, those in a handler and those
// handed to net/http included.
func TestClose(t *testing.T) {
	entered := make(chan struct{}, 2)
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-r.Context().Done()
	}), true)
	var conns []net.Conn
	for _, raw := range []string{"GET /x HTTP/1.1\r\nHost: a\r\n\r\n", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx"} {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, raw)
		conns = append(conns, c)
		<-entered
	}
	s.lean.Close()
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Errorf("connection %d: %v, want closed", i, err)
		}
	}
}

// FuzzSameAsNetHTTP sends any bytes to the loop and to net/http's server:
// both answer alike (or close alike).
func FuzzSameAsNetHTTP(f *testing.F) {
	for _, s := range []string{
		"GET /echo HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /small HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
		"HEAD /big HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET /trailers HTTP/1.1\r\nHost: a\r\nTE: trailers\r\n\r\n",
		"POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx",
		"GET /echo HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: \r\n\r\n",
		"GET /echo?x=%zz HTTP/1.1\r\nhOsT: A.b-c_d~e\r\nX:\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: \x80\xff\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: a\r\n\r\nGET /small HTTP/1.1\r\nHost: a\r\n\r\n",
	} {
		f.Add(s)
	}
	std := serve(f, http.HandlerFunc(shapes), false, fuzzTune)
	lean := serve(f, http.HandlerFunc(shapes), true, fuzzTune)
	f.Fuzz(func(t *testing.T, raw string) {
		want, got := fuzzExchange(t, std.addr, raw), fuzzExchange(t, lean.addr, raw)
		if got != want {
			t.Errorf("%q:\nloop     %q\nnet/http %q", raw, got, want)
		}
	})
}

func fuzzTune(h *http.Server) { h.ReadHeaderTimeout = 2 * time.Second }

// fuzzExchange sends raw, half-closes, and returns all that came back,
// Date's values masked.
func fuzzExchange(t *testing.T, addr, raw string) string {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, raw)
	c.(*net.TCPConn).CloseWrite()
	b, _ := io.ReadAll(c)
	return dateField.ReplaceAllString(string(b), "Date: (date)")
}
