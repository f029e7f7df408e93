package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
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
	c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
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
