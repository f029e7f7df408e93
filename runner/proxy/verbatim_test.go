package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/tcptest"
)

// rawUpstream serves every request on a connection, its body read, with
// the answer raw, written as it is.
func rawUpstream(t *testing.T, raw string) string {
	t.Helper()
	return "http://" + tcptest.Serve(t, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, raw); err != nil {
				return
			}
		}
	})
}

// rawAnswer sends raw to the proxy on a connection of its own and returns
// what came back until the connection closed (the requests say
// Connection: close, or are HTTP/1.0).
func rawAnswer(t *testing.T, tp *testProxy, raw string) string {
	t.Helper()
	var b []byte
	if err := withRawConn(t, tp, raw, func(c net.Conn) error { b, _ = io.ReadAll(c); return nil }); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An answer without a Content-Type reaches the client without one, on
// both paths and both servers: the proxy's server does not sniff one
// from the body (a JSON API's answer taken for text/plain, an HTML one
// for text/html), as the upstream's answer goes to the client as it is.
func TestAnswerWithoutContentTypeGetsNone(t *testing.T) {
	up := rawUpstream(t, "HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n<html>hi</html>")
	tp := startProxy(t, up, "", 0, nil)
	for _, raw := range []string{
		"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",                         // bodiless, the server's loop
		"GET /a HTTP/1.0\r\n\r\n",                                                         // bodiless, net/http's server
		"POST /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi", // ReverseProxy
	} {
		got := rawAnswer(t, tp, raw)
		if !strings.Contains(got, "<html>hi</html>") {
			t.Errorf("%q: answered %q, want the upstream's body", raw, got)
		}
		if strings.Contains(strings.ToLower(got), "content-type") {
			t.Errorf("%q: answered %q, with a Content-Type the upstream did not send", raw, got)
		}
	}
	// One the upstream sends is kept.
	typed := startProxy(t, rawUpstream(t, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"), "", 0, nil)
	for _, raw := range []string{"GET /a HTTP/1.0\r\n\r\n", "POST /a HTTP/1.0\r\nContent-Length: 1\r\n\r\nx"} {
		if got := rawAnswer(t, typed, raw); !strings.Contains(got, "Content-Type: application/json\r\n") {
			t.Errorf("%q: answered %q, want the upstream's Content-Type", raw, got)
		}
	}
}

// An HTTP/1.0 client gets no 1xx answer (RFC 9110, 15.2: a server must
// not send one to it): it would take a 103 Early Hints for the final
// answer, and the real one for its body. An HTTP/1.1 client gets it.
func TestNoInformationalAnswerToHTTP10(t *testing.T) {
	up := rawUpstream(t, "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"+
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
	tp := startProxy(t, up, "", 0, nil)
	for _, raw := range []string{
		"GET /a HTTP/1.0\r\n\r\n",                         // bodiless
		"POST /a HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi", // ReverseProxy
	} {
		got := rawAnswer(t, tp, raw)
		if !strings.HasPrefix(got, "HTTP/1.0 200 OK\r\n") || !strings.HasSuffix(got, "\r\n\r\nok") {
			t.Errorf("%q: answered %q, want only the final 200", raw, got)
		}
	}
	for _, raw := range []string{
		"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"POST /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi",
	} {
		if got := rawAnswer(t, tp, raw); !strings.HasPrefix(got, "HTTP/1.1 103 Early Hints\r\n") {
			t.Errorf("%q: answered %q, want the 103 first", raw, got)
		}
	}
	tp.stillServes(t)
}

// --max-wait's 429 to a request that waited for one of the -j slots says
// so: the rules held nothing (none binds under 1000/s), and a message
// blaming them sent its reader to the wrong flag.
func TestMaxWaitOnASlotSaysTheSlots(t *testing.T) {
	release := make(chan struct{})
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			io.WriteString(w, "start\n")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	})
	tp := startProxy(t, up.URL, "1000/s", 1, nil, func(tp *testProxy) { tp.p.opts.MaxWait = 50 * time.Millisecond })
	defer close(release)
	resp, err := http.Get(tp.url + "/hold")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	code, body := tp.get(t, "/quick")
	if code != http.StatusTooManyRequests || !strings.Contains(body, "-j 1 slots") || strings.Contains(body, "rules") {
		t.Errorf("waiting for the only slot past --max-wait: %d %q; want 429 naming the -j slots, not the rules", code, body)
	}
}

// A request with Expect: 100-continue that the upstream refuses at once,
// without asking for its body, has its answer at once: its client sends
// no body before a 100 Continue or the answer (it need not ever). The
// proxy's handler used to put its own wrappers in the server's request,
// so net/http's server no longer saw a body of 100-continue unread: it
// read the body for its next request before writing the answer, and
// held the answer until the client gave up waiting and sent the body it
// was told nothing about (curl: after 1s, with the whole upload).
func TestExpectContinueRefusedIsAnsweredAtOnce(t *testing.T) {
	up := "http://" + tcptest.Serve(t, func(c net.Conn) {
		defer c.Close()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		if req.URL.Path == "/ok" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 3\r\nConnection: close\r\n\r\nbig")
	})
	tp := startProxy(t, up, "", 1, nil)
	for _, length := range []int{100, 100 << 10, 10 << 20} {
		c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "PUT /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", length)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("Expect: 100-continue, %d bytes, refused by the upstream: %v %v; want its 413 without sending the body", length, resp, err)
		}
	}
	tp.stillServes(t)
}

// A malformed body (a broken chunked encoding), read before the wait, is
// answered 400 and counted as such, not as a client gone while waiting:
// the summary says what the proxy answered itself.
func TestMalformedBodyIsCountedAsSuch(t *testing.T) {
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) { t.Error("a malformed body reached the upstream") })
	tp := startProxy(t, up.URL, "", 0, nil)
	line, err := rawRequest(t, tp, "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nhello\r\n0\r\n\r\n")
	if !strings.HasPrefix(line, "HTTP/1.1 400 ") {
		t.Errorf("malformed chunked body: %q, %v; want 400", line, err)
	}
	if st := tp.p.Stats(); st.BadBody != 1 || st.Gone != 0 {
		t.Errorf("bad body %d, gone %d; want 1 and 0", st.BadBody, st.Gone)
	}
	// A client that leaves mid-body is gone, not malformed.
	withRawConn(t, tp, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nonly ten b", func(net.Conn) error { return nil })
	for deadline := time.Now().Add(10 * time.Second); tp.p.Stats().Gone == 0 && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	if st := tp.p.Stats(); st.BadBody != 1 || st.Gone != 1 {
		t.Errorf("after a client gone mid-body: bad body %d, gone %d; want 1 and 1", st.BadBody, st.Gone)
	}
	tp.stillServes(t)
}
