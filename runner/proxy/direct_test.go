package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// rawUpstream is an upstream that speaks HTTP by hand: it serves each
// connection with serve, on a goroutine, and closes it after, until the
// test ends. It returns its URL.
func rawUpstream(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// An upstream that drops each connection after one answer, without
// saying so (no Connection: close): the proxy's kept connection is stale
// at the next request, which goes again on a fresh one and is answered.
func TestStaleKeptConnectionIsRetriedOnce(t *testing.T) {
	var conns, closed atomic.Int32
	up := rawUpstream(t, func(c net.Conn) {
		conns.Add(1)
		defer func() { c.Close(); closed.Add(1) }() // rawUpstream's Close comes later, and does nothing
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		body := "answer to " + req.URL.Path
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	})
	tp := startProxy(t, up, "", 0, nil)
	for i := range 5 {
		path := fmt.Sprintf("/r%d", i)
		if code, body := tp.get(t, path); code != 200 || body != "answer to "+path {
			t.Fatalf("GET %s: %d %q, want 200 from the upstream", path, code, body)
		}
		// The drop comes before the next request: a close racing the
		// request's write is one the proxy cannot tell from a server
		// that read it, and does not send again (direct.go).
		eventually(t, "the upstream's close", func() bool { return closed.Load() >= int32(i+1) })
	}
	if n := conns.Load(); n < 5 {
		t.Errorf("%d upstream connections for 5 requests, each dropped after one answer", n)
	}
}

// Answers of every framing come through whole on kept connections, one
// after another: a length, chunked, none for HEAD, 204 and 304, and a
// 103 Early Hints before the answer.
func TestDirectPathFramings(t *testing.T) {
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			for i := range 3 {
				fmt.Fprintf(w, "part %d;", i)
				w.(http.Flusher).Flush()
			}
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/304":
			w.WriteHeader(http.StatusNotModified)
		case "/hints":
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			io.WriteString(w, "after hints")
		default:
			w.Header().Set("Content-Length", "6")
			io.WriteString(w, "length")
		}
	})
	tp := startProxy(t, up.URL, "", 0, nil)
	for range 2 {
		for path, want := range map[string]string{"/chunked": "part 0;part 1;part 2;", "/len": "length", "/204": "", "/304": "", "/hints": "after hints"} {
			if _, body := tp.get(t, path); body != want {
				t.Errorf("GET %s: %q, want %q", path, body, want)
			}
		}
		resp, err := http.Head(tp.url + "/len")
		if err != nil || resp.StatusCode != 200 || resp.ContentLength != 6 {
			t.Errorf("HEAD /len: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
	}
	// A 103 reaches the client before the answer.
	c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /hints HTTP/1.1\r\nHost: x\r\n\r\n")
	if line, _ := bufio.NewReader(c).ReadString('\n'); !strings.Contains(line, "103") {
		t.Errorf("the first line to the client: %q, want 103 Early Hints", line)
	}
}

// An upstream whose headers never end is a bad gateway once they pass
// 10 MiB; the proxy holds a buffer of them, not all.
func TestEndlessResponseHeadersAre502(t *testing.T) {
	up := rawUpstream(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Endless: " + strings.Repeat("a", 1<<10) + "\r\n"
		for {
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	})
	tp := startProxy(t, up, "", 0, nil)
	if code, body := tp.get(t, "/"); code != http.StatusBadGateway {
		t.Errorf("endless headers: %d %q, want 502", code, body)
	}
}

// An upstream's reason phrase reaches pace's report with its control
// characters escaped: it is printed in pace's lines (-v, failures), and
// must not drive the terminal.
func TestUpstreamReasonIsEscaped(t *testing.T) {
	up := rawUpstream(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 404 \x1b]0;pwned\x07 Gone\r\nContent-Length: 0\r\n\r\n")
	})
	tp := startProxy(t, up, "", 0, nil)
	if code, _ := tp.get(t, "/x"); code != 404 {
		t.Fatalf("GET /x: %d, want the upstream's 404", code)
	}
	ev := tp.doneN(t, 1)[0]
	if got := ev.Result.HTTP.Status; strings.ContainsAny(got, "\x1b\x07") || !strings.Contains(got, `\x1b]0;pwned\a Gone`) {
		t.Errorf("status %q: want its control characters escaped", got)
	}
	if msg := ev.Result.Err.Error(); strings.ContainsAny(msg, "\x1b\x07") {
		t.Errorf("error %q holds control characters", msg)
	}
}
