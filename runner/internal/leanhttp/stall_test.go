package leanhttp

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// serveStalls serves h behind the loop with WriteIdleTimeout d.
func serveStalls(t *testing.T, d time.Duration, h http.HandlerFunc) (string, *Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{HTTP: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}, WriteIdleTimeout: d}
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String(), s
}

// open counts the connections s serves, the loop's and those handed to
// HTTP.
func (s *Server) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns) + len(s.handed)
}

// stalledEnd is how a handler's writes to a client ended.
type stalledEnd struct {
	err     error // the write that failed
	stalled bool  // WriteStalled
	ctxDone bool  // the request's context was cancelled
}

// A client that reads none of its answer has the write cut off after
// WriteIdleTimeout, on the loop's connections (GET) and on those handed to
// net/http (a POST, and an answer that net/http writes once the handler
// has returned): the write fails, WriteStalled says why, the request's
// context is cancelled and the connection is closed. Without the timeout
// the write would block for as long as the client does.
func TestWriteIdleTimeoutCutsAClientThatReadsNothing(t *testing.T) {
	for _, head := range []string{
		"GET /big HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi",
	} {
		method, _, _ := strings.Cut(head, " ")
		t.Run(method, func(t *testing.T) {
			ended := make(chan stalledEnd, 1)
			addr, srv := serveStalls(t, 200*time.Millisecond, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				chunk := bytes.Repeat([]byte("z"), 4<<10)
				var err error
				for range 64 << 10 { // 256 MiB: more than any socket buffers
					if _, err = w.Write(chunk); err != nil {
						break
					}
				}
				ended <- stalledEnd{err, WriteStalled(r.Context()), r.Context().Err() != nil}
			})
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.(*net.TCPConn).SetReadBuffer(4 << 10)
			io.WriteString(c, head)
			select {
			case e := <-ended:
				if e.err == nil || !e.stalled || !e.ctxDone {
					t.Errorf("the handler's writes ended with %v, WriteStalled %v, context cancelled %v; want an error, true, true", e.err, e.stalled, e.ctxDone)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the handler still writes 20s after its client stopped reading")
			}
			waitFor(t, "the connection closed", func() bool { return srv.open() == 0 })
		})
	}
}

// A client that reads slowly but steadily is never cut off, even while
// one write takes far longer than WriteIdleTimeout (Linux: the bytes sent
// are seen as they go); and a client that reads nothing for a while, but
// less than the timeout, neither.
func TestWriteIdleTimeoutSparesASlowReader(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a write's progress is seen on Linux only")
	}
	const size = 32 << 20
	ended := make(chan stalledEnd, 1)
	addr, _ := serveStalls(t, time.Second, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "33554432")
		_, err := w.Write(make([]byte, size)) // one write, far more than the socket buffers
		ended <- stalledEnd{err, WriteStalled(r.Context()), false}
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(16 << 10)
	io.WriteString(c, "GET /big HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	buf := make([]byte, 4<<10)
	read := 0
	for start := time.Now(); time.Since(start) < 3*time.Second; { // slowly: 4 KiB every 20ms
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("after %d bytes, read slowly: %v", read, err)
		}
		read += n
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a pause, shorter than the timeout
	n, err := io.Copy(io.Discard, c)   // the rest, at once, to the close
	if err != nil || int64(read)+n < size {
		t.Fatalf("after %d bytes: %v, want the whole answer", int64(read)+n, err)
	}
	select {
	case e := <-ended:
		if e.err != nil || e.stalled {
			t.Errorf("the write ended with %v, WriteStalled %v; want nil, false: the client read all along", e.err, e.stalled)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the write did not return")
	}
}

// Without WriteIdleTimeout a request's context says nothing of stalls.
func TestWriteStalledWithoutTheTimeout(t *testing.T) {
	if WriteStalled(context.Background()) {
		t.Error("WriteStalled(context.Background()) = true")
	}
}
