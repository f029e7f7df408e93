package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/pacehttp"
)

// discardWriter is an http.ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

// BenchmarkServeHTTP is the proxy's per-request path with no rule: a GET
// admitted, sent to a loopback upstream over a kept-alive connection, its
// 64-byte answer copied, and its events told (as pace proxy counts them).
func BenchmarkServeHTTP(b *testing.B) {
	body := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "64")
		w.Write(body)
	}))
	defer up.Close()
	lim, err := throttle.New(throttle.Options{})
	if err != nil {
		b.Fatal(err)
	}
	base := NewUpstreamTransport(0, 0)
	defer base.CloseIdleConnections()
	u, _ := url.Parse(up.URL)
	var done int
	p, err := New(Options{Upstream: u, Transport: pacehttp.New(lim, pacehttp.Options{Base: Base(base), Learn: true}),
		OnEvent: func(ev runner.Event) {
			if ev.Kind == runner.JobDone {
				done++
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "http://proxy.test/small?page=2", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		clear(w.h)
		p.ServeHTTP(w, req)
	}
	b.StopTimer()
	if done != b.N {
		b.Fatalf("%d requests done, want %d", done, b.N)
	}
	_ = io.Discard
}
