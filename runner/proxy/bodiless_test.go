package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle/pacehttp"
)

// The bodiless path and httputil.ReverseProxy, held to each other: the
// same requests sent through a proxy on each path reach the upstream
// alike and come back alike, over the direct upstream path and over
// http.Transport.

// seenRequest is what the upstream saw of a request.
type seenRequest struct {
	mu   sync.Mutex
	last string
}

// shapesUpstream answers each path in a way of its own and notes the
// request it got.
func shapesUpstream(t *testing.T, seen *seenRequest) string {
	t.Helper()
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s %s host=%s close=%v len=%d te=%v\n", r.Method, r.RequestURI, r.Proto, r.Host, r.Close, r.ContentLength, r.TransferEncoding)
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range r.Header {
				if !yield(k) {
					return
				}
			}
		})
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %q\n", k, r.Header[k])
		}
		seen.mu.Lock()
		seen.last = b.String()
		seen.mu.Unlock()
		h := w.Header()
		switch strings.TrimPrefix(r.URL.Path, "/v1") {
		case "/small":
			h.Set("Content-Type", "text/plain")
			io.WriteString(w, "small\n")
		case "/hop":
			h.Set("Connection", "X-Private, close")
			h.Set("X-Private", "dropped")
			h.Set("Keep-Alive", "timeout=5")
			h.Set("Proxy-Authenticate", "Basic")
			h.Set("Upgrade", "nothing")
			h.Set("X-Kept", "kept")
			io.WriteString(w, "hop\n")
		case "/chunked":
			io.WriteString(w, "first\n")
			w.(http.Flusher).Flush()
			io.WriteString(w, "second\n")
		case "/events":
			h.Set("Content-Type", "Text/Event-Stream; charset=utf-8")
			h.Set("Content-Length", "12")
			io.WriteString(w, "data: 1\n\n")
			w.(http.Flusher).Flush()
			io.WriteString(w, "...")
		case "/trailers":
			h.Set("Trailer", "X-Sum")
			io.WriteString(w, "body")
			h.Set("X-Sum", "42")
			h.Set(http.TrailerPrefix+"X-Late", "late")
		case "/hints":
			h.Set("Link", "</a.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			h.Del("Link")
			io.WriteString(w, "hinted")
		case "/no-content":
			w.WriteHeader(http.StatusNoContent)
		case "/not-modified":
			h.Set("Etag", `"x"`)
			w.WriteHeader(http.StatusNotModified)
		case "/refused":
			h.Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, "slow down\n")
		case "/big":
			w.Write(bytes.Repeat([]byte("0123456789abcdef"), 10000))
		case "/short":
			h.Set("Content-Length", "100")
			io.WriteString(w, "only this")
			panic(http.ErrAbortHandler) // the body breaks off
		default:
			http.NotFound(w, r)
		}
	})
	return up.URL
}

var dateLine = regexp.MustCompile(`(?m)^Date: [^\r\n]*`)

// rawExchange sends raw to addr on a connection of its own and returns
// the answer's head (Date masked), body, trailers, or how reading failed.
func rawExchange(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, raw)
	var rec bytes.Buffer
	br := bufio.NewReader(io.TeeReader(c, &rec))
	method, _, _ := strings.Cut(raw, " ")
	var resp *http.Response
	for { // 1xx first: its head is kept with the answer's
		var err error
		if resp, err = http.ReadResponse(br, &http.Request{Method: method}); err != nil {
			return "error: " + err.Error()
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	b, err := io.ReadAll(resp.Body)
	head, _, _ := strings.Cut(rec.String(), "\r\n\r\n")
	return fmt.Sprintf("%s\n\n%q %v %v", dateLine.ReplaceAllString(head, "Date: (date)"), b, resp.Trailer, err)
}

func TestBodilessPathAsReverseProxy(t *testing.T) {
	for _, transport := range []string{"direct", "http.Transport"} {
		var seen seenRequest
		up := shapesUpstream(t, &seen)
		tune := func(o *pacehttp.Options) {
			// /refused pauses for a millisecond, and teaches no rule.
			o.MaxServerPause, o.Backoff, o.Learn = time.Millisecond, time.Millisecond, false
			if transport == "http.Transport" {
				tr := &http.Transport{}
				t.Cleanup(tr.CloseIdleConnections)
				o.Base = Base(tr)
			}
		}
		fast := startProxy(t, up+"/v1?key=k", "", 0, tune)
		stock := startProxy(t, up+"/v1?key=k", "", 0, tune, func(tp *testProxy) { tp.p.noBodiless = true })
		for _, path := range []string{"/small", "/hop", "/chunked", "/events", "/trailers", "/hints", "/no-content",
			"/not-modified", "/refused", "/big", "/short", "/missing", "/small?q=a%20b&r=1", "/small?", "/sm%61ll/x%2Fy",
			"//small", "/small/"} {
			for _, method := range []string{"GET", "HEAD", "OPTIONS"} {
				for _, headers := range []string{
					"",
					"User-Agent: client/1\r\nAccept: */*\r\n",
					"Connection: X-Drop, keep-alive\r\nX-Drop: 1\r\nKeep-Alive: 5\r\nProxy-Connection: keep-alive\r\n",
					"Te: trailers, gzip\r\nTrailer: X\r\n",
					"Te: gzip\r\n",
					"X-Forwarded-For: 10.0.0.1\r\nForwarded: for=x\r\nX-Forwarded-Host: h\r\nX-Forwarded-Proto: https\r\n",
					"Proxy-Authorization: Basic c2VjcmV0\r\nAuthorization: Bearer t0k\r\nCookie: a=b\r\n",
					"Connection: close\r\n",
					"X-Multi: 1\r\nX-Multi: 2\r\nAccept-Encoding: gzip\r\n",
				} {
					raw := method + " " + path + " HTTP/1.1\r\nHost: proxy.test\r\n" + headers + "\r\n"
					req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
					if err != nil {
						t.Fatal(err)
					}
					if !fast.p.bodiless(req) {
						t.Errorf("%q: not on the bodiless path", raw)
					}
					got := rawExchange(t, strings.TrimPrefix(fast.url, "http://"), raw)
					seen.mu.Lock()
					gotUp := seen.last
					seen.mu.Unlock()
					want := rawExchange(t, strings.TrimPrefix(stock.url, "http://"), raw)
					seen.mu.Lock()
					wantUp := seen.last
					seen.mu.Unlock()
					if got != want {
						t.Errorf("%s: %q: answers differ:\nbodiless      %s\nReverseProxy  %s", transport, raw, got, want)
					}
					if gotUp != wantUp {
						t.Errorf("%s: %q: the upstream saw\nbodiless      %s\nReverseProxy  %s", transport, raw, gotUp, wantUp)
					}
				}
			}
		}
		// The same reports: one per request, alike but for timing (and
		// order: a request can begin before the one before is reported).
		report := func(tp *testProxy) []string {
			var rs []string
			for _, ev := range tp.doneN(t, 17*3*9) {
				r := ev.Result
				rs = append(rs, fmt.Sprintf("%s %d %v %d %s %d %s", r.Job.Item, r.ExitCode, r.Err, r.HTTP.StatusCode, r.HTTP.Status, r.HTTP.Bytes, r.HTTP.Conn))
			}
			slices.Sort(rs)
			return rs
		}
		if f, s := report(fast), report(stock); !slices.Equal(f, s) {
			for i := range min(len(f), len(s)) {
				if f[i] != s[i] {
					t.Errorf("%s: reports differ, first at %d of %d:\nbodiless     %q\nReverseProxy %q", transport, i, len(f), f[i], s[i])
					break
				}
			}
		}
	}
}

// Requests with a body, an upgrade or a query ReverseProxy re-encodes
// take ReverseProxy.
func TestWhichRequestsAreBodiless(t *testing.T) {
	tp := startProxy(t, "http://up.test", "", 0, nil)
	for raw, want := range map[string]bool{
		"GET /x HTTP/1.1\r\nHost: a\r\n\r\n":                                         true,
		"DELETE /x?a=1&b=%41 HTTP/1.1\r\nHost: a\r\n\r\n":                            true,
		"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx":                  false,
		"POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n": false,
		"GET /x HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\n":                   false,
		"GET /x HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\n\r\n":      false,
		"GET /x?a;b HTTP/1.1\r\nHost: a\r\n\r\n":                                     false,
		"GET /x?a=%zz HTTP/1.1\r\nHost: a\r\n\r\n":                                   false,
		"GET /x?a=%4 HTTP/1.1\r\nHost: a\r\n\r\n":                                    false,
	} {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			t.Fatal(err)
		}
		if got := tp.p.bodiless(req); got != want {
			t.Errorf("%q: bodiless %v, want %v", raw, got, want)
		}
	}
	if !cleanQuery(strings.Repeat("a&", 9998)+"a") || cleanQuery(strings.Repeat("a&", 10000)) {
		t.Error("cleanQuery does not stop at ReverseProxy's 10,000 parameters")
	}
}

// The redacted URLs a proxy keeps by the client's target are each
// request's own, secrets hidden.
func TestReportedURLsAreEachRequestsRedacted(t *testing.T) {
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") })
	tp := startProxy(t, up.URL+"/v1", "", 0, nil)
	paths := []string{"/a?api_key=s3cret-1", "/b?api_key=s3cret-2", "/a?api_key=s3cret-1", "/a?token=s3cret-3&x=1", "/b?api_key=s3cret-2"}
	for _, p := range paths {
		tp.get(t, p)
	}
	evs := tp.doneN(t, len(paths))
	var got []string
	for _, ev := range evs {
		got = append(got, strings.TrimPrefix(ev.Job.Argv[1], up.URL))
	}
	want := []string{"/v1/a?api_key=REDACTED", "/v1/b?api_key=REDACTED", "/v1/a?api_key=REDACTED", "/v1/a?token=REDACTED&x=1", "/v1/b?api_key=REDACTED"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reported %q, want %q", got, want)
	}
	tp.leaks(t, "s3cret")
}

// A target in absolute form goes to the upstream, whatever host it names,
// and its user information (never sent: a server ignores it, and
// http.Transport does not make it an Authorization) is not shown as the
// upstream's in the report, on either path.
func TestAbsoluteFormTargetGoesToTheUpstream(t *testing.T) {
	var hosts, auths []string
	var mu sync.Mutex
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts, auths = append(hosts, r.Host), append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
	})
	tp := startProxy(t, up.URL, "", 0, nil)
	for _, raw := range []string{
		"GET http://u:pw-s3cret@other.example.com/x HTTP/1.1\r\nHost: other.example.com\r\nConnection: close\r\n\r\n",
		"POST http://u:pw-s3cret@other.example.com/x HTTP/1.1\r\nHost: other.example.com\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
		"GET /x HTTP/1.1\r\nHost: other.example.com\r\nConnection: close\r\n\r\n",
	} {
		if line, err := rawRequest(t, tp, raw); line != "HTTP/1.1 200 OK" {
			t.Errorf("%.40q: %q %v, want 200", raw, line, err)
		}
	}
	evs := tp.doneN(t, 3)
	for _, ev := range evs {
		if ev.Job.Argv[1] != up.URL+"/x" {
			t.Errorf("reported %q, want %q", ev.Job.Argv[1], up.URL+"/x")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range hosts {
		if want := strings.TrimPrefix(up.URL, "http://"); hosts[i] != want || auths[i] != "" {
			t.Errorf("the upstream got Host %q, Authorization %q; want %q and none", hosts[i], auths[i], want)
		}
	}
	tp.leaks(t, "s3cret")
}

// A client that calls many distinct long URLs (search queries,
// cache-busting parameters) does not grow the proxy: long targets are not
// kept, and the kept ones are bounded by their text.
func TestLongURLsAreNotKept(t *testing.T) {
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "x") })
	tp := startProxy(t, up.URL, "", 0, nil)
	long := strings.Repeat("a", 4000)
	const n = 20
	for i := range n {
		tp.get(t, fmt.Sprintf("/x?i=%d&p=%s&api_key=s3cret", i, long))
	}
	evs := tp.doneN(t, n)
	if got := evs[n-1].Job.Argv[1]; !strings.HasSuffix(got, "&api_key=REDACTED") {
		t.Errorf("reported %.40q...; want its api_key redacted", got)
	}
	tp.p.urlMu.Lock()
	kept, bytes := len(tp.p.urls), tp.p.urlBytes
	tp.p.urlMu.Unlock()
	if kept != 0 || bytes != 0 {
		t.Errorf("kept %d URLs (%d bytes) of %d long ones; want none", kept, bytes, n)
	}
	// Short ones are kept, within the bound.
	for i := range 3 {
		tp.get(t, fmt.Sprintf("/s?i=%d", i))
	}
	tp.doneN(t, n+3)
	tp.p.urlMu.Lock()
	kept, bytes = len(tp.p.urls), tp.p.urlBytes
	tp.p.urlMu.Unlock()
	if kept != 3 || bytes <= 0 || bytes > maxURLBytes {
		t.Errorf("kept %d URLs (%d bytes) of 3 short ones; want 3", kept, bytes)
	}
	tp.leaks(t, "s3cret")
}
