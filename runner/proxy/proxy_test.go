package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/pacehttp"
)

// Tests of the proxy against hostile upstreams and clients: each ends by
// checking that the proxy still serves, and none lets a secret out.

// testProxy is a Proxy served on a loopback port.
type testProxy struct {
	url string
	p   *Proxy
	srv *Server

	mu     sync.Mutex
	events []runner.Event
}

// startProxy serves a Proxy in front of upstream under rules, with at
// most jobs in flight; tune, if set, changes the transport's options,
// and each of more changes the proxy or its server before it serves.
func startProxy(t *testing.T, upstream, rules string, jobs int, tune func(*pacehttp.Options), more ...func(*testProxy)) *testProxy {
	t.Helper()
	rs, err := throttle.ParseRules(rules)
	if err != nil && rules != "" {
		t.Fatal(err)
	}
	lim, err := throttle.New(throttle.Options{Rules: rs})
	if err != nil {
		t.Fatal(err)
	}
	base := NewUpstreamTransport(jobs, 0)
	t.Cleanup(base.CloseIdleConnections)
	topts := pacehttp.Options{Base: Base(base), Learn: true, FixedMargin: true}
	if tune != nil {
		tune(&topts)
	}
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	tp := &testProxy{}
	tp.p, err = New(Options{Upstream: u, Transport: pacehttp.New(lim, topts), Jobs: jobs, Rules: rs,
		OnEvent: func(ev runner.Event) {
			tp.mu.Lock()
			tp.events = append(tp.events, ev)
			tp.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp.srv = NewServer(tp.p)
	for _, f := range more {
		f(tp)
	}
	go tp.srv.Serve(ln)
	t.Cleanup(func() { tp.srv.Close() })
	tp.url = "http://" + ln.Addr().String()
	return tp
}

// get sends a GET for path through the proxy and returns the status and
// body, failing the test after 10s.
func (tp *testProxy) get(t *testing.T, path string, header ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", tp.url+path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// stillServes checks that the proxy answers a request to /ok with 200.
func (tp *testProxy) stillServes(t *testing.T) {
	t.Helper()
	if code, body := tp.get(t, "/ok"); code != 200 {
		t.Errorf("the proxy no longer serves: GET /ok = %d %q", code, body)
	}
}

// doneWhen waits up to 10s for the JobDone events to satisfy ok, then
// returns them. The proxy gives a request's slot back before it reports
// how the request ended, so a request served after it on that slot can
// finish first: a test reads the reports only once they are all there.
func (tp *testProxy) doneWhen(t *testing.T, what string, ok func([]runner.Event) bool) []runner.Event {
	t.Helper()
	var evs []runner.Event
	eventually(t, what, func() bool {
		evs = tp.done()
		return ok(evs)
	})
	return evs
}

// resultOf waits for the JobDone event of the request to url and
// returns its result (the last, if several).
func (tp *testProxy) resultOf(t *testing.T, what, url string) *runner.Result {
	t.Helper()
	var res *runner.Result
	tp.doneWhen(t, what, func(evs []runner.Event) bool {
		for _, ev := range evs {
			if ev.Job.Argv[1] == url {
				res = ev.Result
			}
		}
		return res != nil
	})
	return res
}

// doneN waits for at least n JobDone events and returns them all.
func (tp *testProxy) doneN(t *testing.T, n int) []runner.Event {
	t.Helper()
	return tp.doneWhen(t, fmt.Sprintf("%d requests reported", n), func(evs []runner.Event) bool { return len(evs) >= n })
}

// done returns the JobDone events so far.
func (tp *testProxy) done() []runner.Event {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var evs []runner.Event
	for _, ev := range tp.events {
		if ev.Kind == runner.JobDone {
			evs = append(evs, ev)
		}
	}
	return evs
}

// leaks fails the test if any secret shows in what the proxy told.
func (tp *testProxy) leaks(t *testing.T, secrets ...string) {
	t.Helper()
	tp.mu.Lock()
	var b strings.Builder
	for _, ev := range tp.events {
		fmt.Fprintf(&b, "%+v %+v\n", ev.Job, ev.Job.Argv)
		if r := ev.Result; r != nil {
			fmt.Fprintf(&b, "%v %+v %+v\n", r.Err, r.HTTP, r.Status())
		}
	}
	tp.mu.Unlock()
	for _, s := range secrets {
		if strings.Contains(b.String(), s) {
			t.Errorf("secret %q in the events:\n%s", s, b.String())
		}
	}
}

func okUpstream(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			io.WriteString(w, "ok\n")
			return
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestUpstreamDownIs502WithAShortBodyAndNoSecret(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	tp := startProxy(t, dead+"/v1", "", 0, nil)
	code, body := tp.get(t, "/x?api_key=k3y-s3cret", "Authorization", "Bearer t0k3n-s3cret", "Cookie", "sid=c00kie-s3cret")
	if code != http.StatusBadGateway || !strings.HasPrefix(body, "pace proxy: ") || len(body) > 200 {
		t.Errorf("upstream down: %d %q, want 502 with a short body", code, body)
	}
	for _, s := range []string{"k3y-s3cret", "t0k3n-s3cret", "c00kie-s3cret"} {
		if strings.Contains(body, s) {
			t.Errorf("the 502's body shows %q: %q", s, body)
		}
	}
	evs := tp.doneN(t, 1)
	if len(evs) != 1 || evs[0].Result.OK() || evs[0].Result.HTTP.Conn != "refused" || evs[0].Result.HTTP.StatusCode != 0 {
		t.Fatalf("events %+v, want one failed request, refused", evs)
	}
	if argv := evs[0].Job.Argv; len(argv) != 2 || argv[0] != "GET" || argv[1] != dead+"/v1/x?api_key=REDACTED" {
		t.Errorf("job argv %q, want GET and the upstream URL redacted", argv)
	}
	tp.leaks(t, "k3y-s3cret", "t0k3n-s3cret", "c00kie-s3cret")
}

func TestSlowUpstreamIs504(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	tp := startProxy(t, up.URL, "", 0, func(o *pacehttp.Options) {
		tr := NewUpstreamTransport(0, 200*time.Millisecond)
		t.Cleanup(tr.CloseIdleConnections)
		o.Base = Base(tr)
	})
	code, body := tp.get(t, "/slow")
	if code != http.StatusGatewayTimeout || len(body) > 200 || !strings.Contains(body, "did not answer in time") {
		t.Errorf("slow upstream: %d %q, want 504 with a short body", code, body)
	}
	if evs := tp.doneN(t, 1); len(evs) != 1 || evs[0].Result.HTTP.Conn != "timeout" {
		t.Errorf("events %+v, want one request timed out", evs)
	}
	tp.stillServes(t)
}

// Absurd Retry-After and rate-limit headers pause for at most
// MaxServerPause, or not at all.
func TestLyingHeadersAreBounded(t *testing.T) {
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		switch r.URL.Path {
		case "/retry-after-forever":
			h.Set("Retry-After", "999999999999")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/retry-after-garbage":
			h.Set("Retry-After", "-5, soon, \x7f")
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/spent-forever":
			h.Set("RateLimit", `"default";r=0;t=99999999999`)
			h.Set("X-RateLimit-Remaining", "0")
			h.Set("X-RateLimit-Reset", "99999999999999999999")
		case "/negative":
			h.Set("RateLimit-Remaining", "-1")
			h.Set("RateLimit-Reset", "-100")
			h.Set("RateLimit-Policy", "0;w=0, -5;w=-1, 99999999999999999999;w=1")
		}
		io.WriteString(w, "x\n")
	})
	const maxPause = 300 * time.Millisecond
	tp := startProxy(t, up.URL, "", 0, func(o *pacehttp.Options) {
		o.MaxServerPause, o.Backoff = maxPause, 100*time.Millisecond
	})
	for _, path := range []string{"/retry-after-forever", "/retry-after-garbage", "/spent-forever", "/negative"} {
		tp.get(t, path)
		start := time.Now()
		tp.stillServes(t)
		// The pause is at most maxPause; a generous bound for a loaded machine.
		if d := time.Since(start); d > maxPause+3*time.Second {
			t.Errorf("after %s the next request waited %v, want at most about %v", path, d, maxPause)
		}
	}
}

// A CONNECT (a client given the proxy as HTTPS_PROXY) is answered 405
// by the proxy, saying how to use it, and never sent upstream.
func TestConnectIs405(t *testing.T) {
	var got atomic.Int64
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) { got.Add(1) })
	tp := startProxy(t, up.URL, "1/s", 0, nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
	if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(string(b), "HTTPS_PROXY") {
		t.Errorf("CONNECT answered %d %q, want 405 saying not to use the proxy as HTTPS_PROXY", resp.StatusCode, b)
	}
	if st := tp.p.Stats(); got.Load() != 0 || st.Connect != 1 {
		t.Errorf("upstream got %d requests, Connect %d; want 0 and 1", got.Load(), st.Connect)
	}
	tp.stillServes(t)
}

// A rule the server publishes (adopted) that would hold a request past
// MaxServerPause is passed on to the client as a 429 with the wait as
// its Retry-After, at once and sent nowhere.
func TestPublishedRuleTooSlowIs429(t *testing.T) {
	var got atomic.Int64
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.Header().Set("RateLimit-Policy", "1;w=2592000")
		io.WriteString(w, "x\n")
	})
	tp := startProxy(t, up.URL, "", 0, func(o *pacehttp.Options) {
		o.Adopt, o.MaxServerPause = true, 10*time.Second
	})
	if code, _ := tp.get(t, "/first"); code != http.StatusOK {
		t.Fatalf("first request: %d, want 200", code)
	}
	start := time.Now()
	resp, err := http.Get(tp.url + "/second")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || ra < 29*24*3600 || !strings.Contains(string(b), "1/30d") ||
		!strings.Contains(string(b), "--max-server-pause 10s") || time.Since(start) > 5*time.Second {
		t.Errorf("second request: %d, Retry-After %q, body %q after %v; want 429 at once, about 30 days, naming the rule and the bound",
			resp.StatusCode, resp.Header.Get("Retry-After"), b, time.Since(start))
	}
	if n := got.Load(); n != 1 {
		t.Errorf("upstream got %d requests, want 1", n)
	}
	if st := tp.p.Stats(); st.TooLong != 1 {
		t.Errorf("stats %+v, want the refusal counted as answered 429", st)
	}
}

// An endless body streams: the client has the first bytes while the
// upstream is still writing, and memory holds a buffer, not the body. A
// client that leaves mid-answer frees its slot at once: with -j 1 the
// next request goes while the endless one would still run.
func TestEndlessBodyStreamsAndAClientGoneFreesItsSlot(t *testing.T) {
	firstSeen := make(chan struct{})
	upstreamGone := make(chan struct{})
	chunk := strings.Repeat("z", 32<<10)
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, chunk)
		w.(http.Flusher).Flush()
		select {
		case <-firstSeen: // the client has it: the proxy did not wait for the end
		case <-time.After(10 * time.Second):
			return
		}
		for {
			if _, err := io.WriteString(w, chunk); err != nil {
				close(upstreamGone)
				return
			}
		}
	})
	tp := startProxy(t, up.URL, "", 1, nil)
	resp, err := http.Get(tp.url + "/endless")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(chunk))
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatalf("first chunk: %v", err)
	}
	close(firstSeen)
	const more = 16 << 20
	if n, err := io.CopyN(io.Discard, resp.Body, more); err != nil {
		t.Fatalf("read %d of %d more bytes: %v", n, more, err)
	}
	resp.Body.Close() // the client leaves mid-answer
	tp.stillServes(t) // -j 1: only once the endless request's slot is free
	select {
	case <-upstreamGone:
	case <-time.After(10 * time.Second):
		t.Error("the upstream still writes 10s after the client left")
	}
	endless := tp.resultOf(t, "the endless request reported", up.URL+"/endless")
	if endless == nil || endless.OK() || endless.HTTP.StatusCode != 200 || endless.HTTP.Bytes < more {
		t.Errorf("the endless request's result: %+v, want failed (client gone) after more than %d bytes", endless, more)
	}
}

// rawRequest writes raw to the proxy on a connection of its own and
// returns the status line of the answer, or the read's error.
func rawRequest(t *testing.T, tp *testProxy, raw string) (string, error) {
	t.Helper()
	var line string
	err := withRawConn(t, tp, raw, func(c net.Conn) (err error) {
		line, err = bufio.NewReader(c).ReadString('\n')
		return err
	})
	return strings.TrimSpace(line), err
}

// withRawConn writes raw to the proxy on a connection of its own, with 10s
// to answer, then lets read read the answer; it returns the write's error
// or read's.
func withRawConn(t *testing.T, tp *testProxy, raw string, read func(c net.Conn) error) error {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		return err
	}
	return read(c)
}

func TestHugeHeadersAre431(t *testing.T) {
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) { t.Error("a huge header reached the upstream") })
	tp := startProxy(t, up.URL, "", 0, nil)
	raw := "GET /x HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 256<<10) + "\r\n\r\n"
	if line, err := rawRequest(t, tp, raw); !strings.HasPrefix(line, "HTTP/1.1 431 ") {
		t.Errorf("huge header: %q, %v; want 431", line, err)
	}
	tp.stillServes(t)
}

func TestMalformedRequestsAre400(t *testing.T) {
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) { t.Errorf("%s %s reached the upstream", r.Method, r.URL) })
	tp := startProxy(t, up.URL, "", 0, nil)
	for _, raw := range []string{
		"GARBAGE\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: -5\r\n\r\n",
		"GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
		"GET /x HTTP/1.1\r\nHost: a\r\nBad Header Name: x\r\n\r\n",
		"GET /x HTTP/9.9\r\nHost: a\r\n\r\n",
		"GET /x HTTP/1.1\r\n\r\n",          // no Host
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", // HTTP/2's preface: 505
	} {
		line, err := rawRequest(t, tp, raw)
		if !strings.HasPrefix(line, "HTTP/1.1 400 ") && !strings.HasPrefix(line, "HTTP/1.1 505 ") {
			t.Errorf("%q: %q, %v; want 400", raw, line, err)
		}
	}
	tp.stillServes(t)
	if evs := tp.doneN(t, 1); len(evs) != 1 {
		t.Errorf("%d requests went upstream, want 1 (/ok)", len(evs))
	}
}

// A client that sends its headers a byte at a time is cut off after
// ReadHeaderTimeout, and the others are served meanwhile.
func TestSlowlorisIsCutOff(t *testing.T) {
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	tp := startProxy(t, up.URL, "", 0, nil, func(tp *testProxy) { tp.srv.HTTP.ReadHeaderTimeout = 300 * time.Millisecond })
	c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cut := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		io.WriteString(c, "GET /x HTTP/1.1\r\nHost: a\r\n")
		for range 200 {
			if _, err := io.WriteString(c, "X"); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		cut <- time.Since(start)
	}()
	tp.stillServes(t)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("the slow client was not cut off: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the slow client was cut off after %v, want about 300ms", d)
	}
}

// A client that half-closes its connection once its request is sent (a
// FIN, as `nc -N` sends: it still reads) looks gone, and its request
// ends, spending nothing if it was waiting. It must not read a 200 for
// it: the server writes an empty 200 for a handler that wrote nothing.
// Both a request that waits for the rules and one the upstream is
// answering get no answer at all.
func TestHalfClosedClientGetsNoFalseAnswer(t *testing.T) {
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		io.WriteString(w, "late\n")
	})
	tp := startProxy(t, up.URL, "1/h", 0, nil)
	tp.stillServes(t) // spends the hour's call: the next one waits
	slow := startProxy(t, up.URL, "", 0, nil)
	for _, c := range []struct {
		tp  *testProxy
		req string
	}{
		{tp, "GET /waits HTTP/1.1\r\nHost: x\r\n\r\n"},
		{tp, "POST /waits HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"}, // served by net/http
		{slow, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"},
		{slow, "POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"},
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(c.tp.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(conn, c.req)
		conn.(*net.TCPConn).CloseWrite()
		got, _ := io.ReadAll(conn)
		if len(got) > 0 {
			t.Errorf("%q, then a half-close: the client read %q; want no answer", c.req, got)
		}
	}
}

// A path with a dot segment would be resolved by the upstream, perhaps
// out of --upstream's path: it is answered 400 and sent nowhere, however
// it is encoded. A dot inside a segment is an ordinary path.
func TestDotSegmentsAre400(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
	})
	tp := startProxy(t, up.URL+"/v1/", "", 0, nil)
	bad := []string{"/../admin", "/%2e%2e/admin", "/%2E./admin", "/..%2fadmin", "/a/./b", "/a/..", "/a/b/../../../admin", "/..%5cadmin", "/a\\..\\admin"}
	for _, target := range bad {
		c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			t.Fatalf("%s: %v", target, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		c.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "segment") {
			t.Errorf("GET %s answered %d %q, want 400 naming the dot segment", target, resp.StatusCode, b)
		}
	}
	for _, target := range []string{"/a..b/c.d", "/.well-known/x", "/..x"} {
		if code, _ := tp.get(t, target); code != http.StatusOK {
			t.Errorf("GET %s answered %d, want 200 (dots inside a segment are not dot segments)", target, code)
		}
	}
	st := tp.p.Stats()
	mu.Lock()
	defer mu.Unlock()
	if st.DotPath != int64(len(bad)) || len(paths) != 3 {
		t.Errorf("DotPath %d and the upstream got %q; want %d and the three ordinary paths", st.DotPath, paths, len(bad))
	}
	for _, p := range paths {
		if !strings.HasPrefix(p, "/v1/") {
			t.Errorf("the upstream got %q, outside /v1/", p)
		}
	}
}

// "*" as a target names the server, for OPTIONS only: net/http answers
// OPTIONS * itself, and any other method with it is answered 400 and sent
// nowhere. Before, GET * reached the upstream as GET /v1/%2A, a call
// spent on a path the client never named.
func TestAsteriskTargetIs400(t *testing.T) {
	var upstream atomic.Int64
	up := okUpstream(t, func(http.ResponseWriter, *http.Request) { upstream.Add(1) })
	tp := startProxy(t, up.URL+"/v1/", "", 0, nil)
	for _, tt := range []struct {
		req  string
		code int
	}{
		{"GET * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", http.StatusBadRequest},
		{"POST * HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi", http.StatusBadRequest},
		{"OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", http.StatusOK},
	} {
		c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, tt.req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			t.Fatalf("%q: %v", tt.req, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		c.Close()
		if resp.StatusCode != tt.code || (tt.code == http.StatusBadRequest && !strings.Contains(string(b), `"*" is for OPTIONS only`)) {
			t.Errorf("%q answered %d %q, want %d", tt.req, resp.StatusCode, b, tt.code)
		}
	}
	if st := tp.p.Stats(); st.Asterisk != 2 || st.DotPath != 0 || upstream.Load() != 0 {
		t.Errorf("Asterisk %d, DotPath %d, the upstream got %d requests; want 2, 0 and none", st.Asterisk, st.DotPath, upstream.Load())
	}
}
