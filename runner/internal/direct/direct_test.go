package direct

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/tcptest"
)

// newTransport returns a Transport over a clone of http.DefaultTransport,
// as pace fetch's client has.
func newTransport() *Transport {
	return &Transport{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// get sends a GET for url with header h through rt and returns the answer
// with its body read.
func get(t *testing.T, rt http.RoundTripper, ctx context.Context, url string, h http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp, string(b)
}

// gzipServer answers with its path, gzipped when the request asks for
// gzip, and tells what Accept-Encoding each request had.
func gzipServer(t *testing.T, asked *atomic.Value) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Store(r.Header.Get("Accept-Encoding"))
		if r.Header.Get("Accept-Encoding") != "gzip" {
			io.WriteString(w, "plain "+r.URL.Path)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, "zipped "+r.URL.Path)
		zw.Close()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// As http.Transport does: gzip is asked for and the answer decompressed,
// without touching the caller's header (shared by every request of a
// fetch); a caller that asks for an encoding itself gets the bytes as
// sent; DisableCompression, HEAD and Range ask for none.
func TestGzipAsHTTPTransport(t *testing.T) {
	var asked atomic.Value
	srv := gzipServer(t, &asked)
	ctx := context.Background()
	tr := newTransport()
	shared := http.Header{"User-Agent": {"pace/test"}}
	for range 2 { // a fresh connection, then a kept one
		resp, body := get(t, tr, ctx, srv.URL+"/a", shared)
		if body != "zipped /a" || !resp.Uncompressed || resp.Header.Get("Content-Encoding") != "" || resp.ContentLength != -1 {
			t.Errorf("GET /a: %q, uncompressed %v, Content-Encoding %q, length %d; want \"zipped /a\", true, none, -1",
				body, resp.Uncompressed, resp.Header.Get("Content-Encoding"), resp.ContentLength)
		}
		if got := asked.Load(); got != "gzip" {
			t.Errorf("Accept-Encoding sent: %q, want gzip", got)
		}
	}
	if _, ok := shared["Accept-Encoding"]; ok || len(shared) != 1 {
		t.Errorf("the caller's header changed: %v", shared)
	}

	resp, body := get(t, tr, ctx, srv.URL+"/own", http.Header{"Accept-Encoding": {"gzip"}})
	if resp.Uncompressed || resp.Header.Get("Content-Encoding") != "gzip" || strings.Contains(body, "zipped") {
		t.Errorf("own Accept-Encoding: uncompressed %v, Content-Encoding %q; want false, gzip (the bytes as sent)",
			resp.Uncompressed, resp.Header.Get("Content-Encoding"))
	}

	if _, body := get(t, tr, ctx, srv.URL+"/range", http.Header{"Range": {"bytes=0-"}}); body != "plain /range" || asked.Load() != "" {
		t.Errorf("with Range: %q, Accept-Encoding %q; want plain, none", body, asked.Load())
	}

	off := newTransport()
	off.DisableCompression = true
	if _, body := get(t, off, ctx, srv.URL+"/off", nil); body != "plain /off" || asked.Load() != "" {
		t.Errorf("DisableCompression: %q, Accept-Encoding %q; want plain, none", body, asked.Load())
	}

	req, _ := http.NewRequest(http.MethodHead, srv.URL+"/head", nil)
	if resp, err := tr.RoundTrip(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if asked.Load() != "" {
			t.Errorf("HEAD: Accept-Encoding %q, want none", asked.Load())
		}
	}
}

// A body that claims gzip and is not fails its read, as with
// http.Transport.
func TestGzipBadBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		io.WriteString(w, "not gzip at all")
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := newTransport().RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("read of a bad gzip body: no error")
	}
}

// The trace hears of the connection (new, then reused), the request
// written and the answer's first byte, in that order: what pacehttp
// stamps the send and the answer with.
func TestTrace(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	tr := newTransport()
	for i, wantReused := range []bool{false, true, true} {
		var events []string
		trace := &httptrace.ClientTrace{
			GetConn: func(string) { events = append(events, "get") },
			GotConn: func(info httptrace.GotConnInfo) {
				if info.Reused != wantReused {
					t.Errorf("request %d: GotConn reused %v, want %v", i, info.Reused, wantReused)
				}
				events = append(events, "got")
			},
			WroteHeaders:         func() { events = append(events, "headers") },
			WroteRequest:         func(httptrace.WroteRequestInfo) { events = append(events, "wrote") },
			GotFirstResponseByte: func() { events = append(events, "first byte") },
		}
		ctx := httptrace.WithClientTrace(context.Background(), trace)
		if _, body := get(t, tr, ctx, srv.URL, nil); body != "ok" {
			t.Fatalf("request %d: %q, want ok", i, body)
		}
		if got, want := strings.Join(events, ","), "get,got,headers,wrote,first byte"; got != want {
			t.Errorf("request %d: trace %s, want %s", i, got, want)
		}
	}
}

// A request whose context ends while its body is read fails with the
// context's cause, not with the deadline that stopped the read.
func TestCancelledBodyReadSaysWhy(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "start")
		w.(http.Flusher).Flush()
		<-release
	}))
	defer srv.Close()
	defer close(release)
	why := errors.New("stopped by the test")
	ctx, cancel := context.WithCancelCause(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	tr := newTransport()
	tr.DisableCompression = true
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	cancel(why)
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, why) {
		t.Errorf("read after cancel: %v, want %v", err, why)
	}
}

// Requests a proxy stands in front of, with a body, or to https take
// http.Transport; the rest the direct path.
func TestWhichPath(t *testing.T) {
	tr := newTransport()
	prx, _ := url.Parse("http://proxy.example:3128")
	tr.Proxy = func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == "behind.example" {
			return prx, nil
		}
		return nil, nil
	}
	for _, c := range []struct {
		method, url string
		body        io.Reader
		direct      bool
	}{
		{"GET", "http://127.0.0.1:1/x", nil, true},
		{"HEAD", "http://127.0.0.1:1/x", nil, true},
		{"GET", "https://127.0.0.1:1/x", nil, false},
		{"GET", "http://behind.example/x", nil, false},
		{"POST", "http://127.0.0.1:1/x", strings.NewReader("b"), false},
		{"DELETE", "http://127.0.0.1:1/x", nil, false},
	} {
		req, _ := http.NewRequest(c.method, c.url, c.body)
		if got := tr.direct(req) != nil; got != c.direct {
			t.Errorf("%s %s: direct %v, want %v", c.method, c.url, got, c.direct)
		}
	}
}

// BenchmarkRoundTrip is a GET and its 64-byte answer over a kept
// loopback connection, on the direct path and through http.Transport.
func BenchmarkRoundTrip(b *testing.B) {
	body := strings.Repeat("x", 63) + "\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "64")
		io.WriteString(w, body)
	}))
	defer srv.Close()
	header := http.Header{"User-Agent": {"pace/bench"}}
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"direct", newTransport()},
		{"http.Transport", http.DefaultTransport.(*http.Transport).Clone()},
	} {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 512)
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/x", nil)
				req.Header = header
				resp, err := c.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := resp.Body.Read(buf); err != nil {
						break
					}
				}
				resp.Body.Close()
			}
		})
	}
}

// The direct path sends the very bytes http.Transport sends for a GET
// that asks for gzip: Accept-Encoding after the request's own headers.
func TestSameBytesAsHTTPTransport(t *testing.T) {
	heads := make(chan string, 2)
	addr := tcptest.Serve(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		var head strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			head.WriteString(line)
			if line == "\r\n" {
				break
			}
		}
		heads <- head.String()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	url := "http://" + addr + "/x?q=1"
	h := http.Header{"User-Agent": {"pace/test"}, "X-Token": {"a", "b"}, "Accept-Language": {"en"}}
	var got []string
	for _, rt := range []http.RoundTripper{newTransport(), http.DefaultTransport.(*http.Transport).Clone()} {
		get(t, rt, context.Background(), url, h)
		got = append(got, <-heads)
	}
	if got[0] != got[1] {
		t.Errorf("direct path sent\n%q\nhttp.Transport sent\n%q", got[0], got[1])
	}
	if !strings.HasSuffix(got[0], "Accept-Encoding: gzip\r\n\r\n") {
		t.Errorf("sent %q: want Accept-Encoding: gzip last", got[0])
	}
}

// rawServer serves each connection with serve(c, i), called after it
// read the connection's request number i (from 0), until serve returns
// false. It counts the requests it read, by path.
func rawServer(t *testing.T, serve func(c net.Conn, i int) bool) (url string, read func(path string) int) {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int{}
	addr := tcptest.Serve(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for i := 0; ; i++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			mu.Lock()
			counts[req.URL.Path]++
			mu.Unlock()
			if !serve(c, i) {
				return
			}
		}
	})
	return "http://" + addr, func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		return counts[path]
	}
}

const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

// A server that reads a request on a kept connection and resets it
// without an answer gets it once: sent again, it would be a call the
// rules never admitted (a strict server saw 3 calls under 2/10s). The
// error goes to the caller, whose retry is admitted.
func TestReadAndDroppedIsNotSentAgain(t *testing.T) {
	srv, read := rawServer(t, func(c net.Conn, i int) bool {
		if i == 0 {
			io.WriteString(c, okAnswer)
			return true
		}
		c.(*net.TCPConn).SetLinger(0) // a reset, as an overloaded gateway sends
		return false
	})
	rt := newTransport()
	defer rt.CloseIdleConnections()
	get(t, rt, context.Background(), srv+"/first", nil)
	req, _ := http.NewRequest(http.MethodGet, srv+"/second", nil)
	if resp, err := rt.RoundTrip(req); err == nil {
		resp.Body.Close()
		t.Fatalf("GET /second: %s; want an error, the server dropped it", resp.Status)
	}
	if n := read("/second"); n != 1 {
		t.Errorf("the server read /second %d times; want once", n)
	}
}

// A kept connection the server closed while it was idle is found before
// a request is written on it: the request goes on a new connection and
// is answered, once.
func TestIdleClosedFoundBeforeWriting(t *testing.T) {
	srv, read := rawServer(t, func(c net.Conn, i int) bool {
		io.WriteString(c, okAnswer)
		return false // closed as soon as it has answered: an idle timeout of 0
	})
	rt := newTransport()
	defer rt.CloseIdleConnections()
	var fresh atomic.Int32
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if !i.Reused {
			fresh.Add(1)
		}
	}})
	for i := range 5 {
		path := fmt.Sprintf("/r%d", i)
		if resp, body := get(t, rt, ctx, srv+path, nil); resp.StatusCode != 200 || body != "ok" {
			t.Fatalf("GET %s: %d %q", path, resp.StatusCode, body)
		}
		if n := read(path); n != 1 {
			t.Errorf("the server read %s %d times; want once", path, n)
		}
		time.Sleep(20 * time.Millisecond) // the server's close reaches this side
	}
	if n := fresh.Load(); n != 5 {
		t.Errorf("%d requests went on a new connection; want all 5, each kept one was closed", n)
	}
}
