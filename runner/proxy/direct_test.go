package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/tcptest"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/runner/internal/direct"
)

// An upstream that drops each connection after one answer, without
// saying so (no Connection: close): the proxy's kept connection is stale
// at the next request, which goes again on a fresh one and is answered.
func TestStaleKeptConnectionIsRetriedOnce(t *testing.T) {
	var conns, closed atomic.Int32
	up := "http://" + tcptest.Serve(t, func(c net.Conn) {
		conns.Add(1)
		defer func() { c.Close(); closed.Add(1) }() // tcptest.Serve's Close comes later, and does nothing
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
		// The drop comes before the next request: found before the
		// write, so nothing is sent twice. (A close racing the write is
		// sent again admitted: TestKeptConnectionLostIsSentAgainAdmitted.)
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
	up := "http://" + tcptest.Serve(t, func(c net.Conn) {
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
	up := "http://" + tcptest.Serve(t, func(c net.Conn) {
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

// dropSecondUpstream answers the first request on each connection and
// reads the second and closes the connection without an answer: what the
// proxy sees when the upstream closes an idle kept connection just as a
// request is written on it (the keep-alive race). It counts the requests
// it read by path.
func dropSecondUpstream(t *testing.T) (url string, read func(path string) int32) {
	var mu sync.Mutex
	counts := map[string]int32{}
	url = "http://" + tcptest.Serve(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			mu.Lock()
			counts[req.URL.Path]++
			mu.Unlock()
			if i > 0 {
				return // closed, unanswered
			}
			body := "answer to " + req.URL.Path
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}
	})
	return url, func(path string) int32 {
		mu.Lock()
		defer mu.Unlock()
		return counts[path]
	}
}

// A kept connection the upstream closes as a GET is written on it: the
// proxy sends the GET again, admitted as a second call, and the client
// gets its answer rather than 502. It is reported as a job of two
// attempts, the first one failed (the upstream may have counted it).
func TestKeptConnectionLostIsSentAgainAdmitted(t *testing.T) {
	up, read := dropSecondUpstream(t)
	tp := startProxy(t, up, "", 1, nil)
	if code, body := tp.get(t, "/first"); code != 200 {
		t.Fatalf("GET /first: %d %q", code, body)
	}
	if code, body := tp.get(t, "/second"); code != 200 || body != "answer to /second" {
		t.Fatalf("GET /second on the lost connection: %d %q, want 200 from the upstream", code, body)
	}
	if n := read("/second"); n != 2 {
		t.Errorf("the upstream read /second %d times; want 2 (lost, then sent again)", n)
	}
	if st := tp.p.opts.Transport.Stats(); st.Admitted != 3 {
		t.Errorf("%d admissions for 3 calls the upstream read; want each admitted", st.Admitted)
	}
	evs := tp.doneN(t, 2)
	last := evs[len(evs)-1]
	if last.Result.Job.Attempt != 2 || !last.Result.OK() || last.RetryDropped {
		t.Errorf("GET /second reported as attempt %d, ok %v, dropped %v; want attempt 2, ok", last.Result.Job.Attempt, last.Result.OK(), last.RetryDropped)
	}
	tp.mu.Lock()
	retried := 0
	for _, ev := range tp.events {
		if ev.Kind == runner.JobFinished && ev.Retry {
			retried++
			if !errors.Is(ev.Result.Err, direct.ErrKeptConnLost) {
				t.Errorf("the lost attempt's error: %v", ev.Result.Err)
			}
		}
	}
	tp.mu.Unlock()
	if retried != 1 {
		t.Errorf("%d attempts reported to be tried again; want 1", retried)
	}
	tp.stillServes(t)
}

// The second attempt is a call of its own: where the rules cannot admit
// it within --max-wait, it is not sent, and the client gets the 502 the
// lost connection gave.
func TestKeptConnectionLostIsNotSentPastTheRules(t *testing.T) {
	up, read := dropSecondUpstream(t)
	tp := startProxy(t, up, "2/h", 1, nil, func(tp *testProxy) { tp.p.opts.MaxWait = 100 * time.Millisecond })
	if code, body := tp.get(t, "/first"); code != 200 {
		t.Fatalf("GET /first: %d %q", code, body)
	}
	if code, body := tp.get(t, "/second"); code != http.StatusBadGateway {
		t.Fatalf("GET /second on the lost connection, no call left: %d %q, want 502", code, body)
	}
	if n := read("/second"); n != 1 {
		t.Errorf("the upstream read /second %d times under 2/h; want once", n)
	}
	if st := tp.p.opts.Transport.Stats(); st.Admitted != 2 {
		t.Errorf("%d admissions under 2/h; want 2", st.Admitted)
	}
	evs := tp.doneN(t, 2)
	if last := evs[len(evs)-1]; last.Result.Job.Attempt != 1 || last.Result.OK() || !last.RetryDropped {
		t.Errorf("GET /second reported as attempt %d, ok %v, dropped %v; want attempt 1 failed, its retry dropped",
			last.Result.Job.Attempt, last.Result.OK(), last.RetryDropped)
	}
	if st := tp.p.Stats(); st.InFlight != 0 || st.Waiting != 0 {
		t.Errorf("in flight %d, waiting %d after the answers; want 0", st.InFlight, st.Waiting)
	}
}

// TestBaseKeepsSendsOnce: Base passes on the direct path's promise to
// send a request once (pacehttp then sets no resend guard on it), and
// makes none for a request that takes net/http's Transport, or for a
// RoundTripper that makes none.
func TestBaseKeepsSendsOnce(t *testing.T) {
	type sendsOnce interface{ SendsOnce(*http.Request) bool }
	up := NewUpstreamTransport(0, 0)
	defer up.CloseIdleConnections()
	get, _ := http.NewRequest("GET", "http://127.0.0.1:1/x", nil)
	post, _ := http.NewRequest("POST", "http://127.0.0.1:1/x", strings.NewReader("body"))
	so, ok := Base(up).(sendsOnce)
	if !ok {
		t.Fatal("Base(NewUpstreamTransport()) has no SendsOnce: pacehttp guards every request against resends")
	}
	if !so.SendsOnce(get) {
		t.Error("Base(NewUpstreamTransport()).SendsOnce(GET) = false, want true (the direct path)")
	}
	if so.SendsOnce(post) {
		t.Error("Base(NewUpstreamTransport()).SendsOnce(POST with a body) = true, want false (net/http's Transport)")
	}
	if so, ok := Base(http.DefaultTransport).(sendsOnce); ok && so.SendsOnce(get) {
		t.Error("Base(http.DefaultTransport).SendsOnce(GET) = true, want false")
	}
}
