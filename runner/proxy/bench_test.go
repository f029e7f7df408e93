package proxy

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
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
func (w *discardWriter) Flush()                      {}

// BenchmarkServeHTTP is the proxy's per-request path with no rule: a GET
// admitted, sent to a loopback upstream over a kept-alive connection, its
// 64-byte answer copied, and its events told (as pace proxy counts them).
// stock is an httputil.ReverseProxy with the same transport and buffers
// and nothing else: the difference is what pace adds.
func BenchmarkServeHTTP(b *testing.B) {
	body := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "64")
		w.Write(body)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	req := httptest.NewRequest("GET", "http://proxy.test/small?page=2", nil)
	run := func(b *testing.B, h http.Handler) {
		w := &discardWriter{h: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			clear(w.h)
			h.ServeHTTP(w, req)
		}
	}
	b.Run("pace", func(b *testing.B) {
		lim, err := throttle.New(throttle.Options{})
		if err != nil {
			b.Fatal(err)
		}
		base := NewUpstreamTransport(0, 0)
		defer base.CloseIdleConnections()
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
		run(b, p)
		if done != b.N {
			b.Fatalf("%d requests done, want %d", done, b.N)
		}
	})
	b.Run("stock", func(b *testing.B) {
		base := NewUpstreamTransport(0, 0)
		defer base.CloseIdleConnections()
		run(b, &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, Transport: base,
			BufferPool: newBufferPool()})
	})
}
