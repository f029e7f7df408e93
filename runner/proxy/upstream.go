package proxy

import (
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/pace-cli/pace/runner/internal/direct"
	"github.com/pace-cli/pace/runner/internal/leanhttp"
)

// Upstream is the RoundTripper a Proxy sends requests upstream with:
// bodiless requests that can be sent again, to a plain http:// upstream,
// go on the handler's goroutine over kept connections of its own; every
// other request through the embedded http.Transport (see
// direct.Transport).
type Upstream = direct.Transport

// NewUpstreamTransport returns the transport a Proxy sends requests
// upstream with: connections kept alive for jobs requests at once (at
// least 64 when jobs is 0, no cap), proxies from the environment, HTTP/2
// when the upstream offers it, bodies and Accept-Encoding as the client
// sent them (no transparent compression), and timeout (0: none) for the
// upstream's response headers. Bodiless GETs (and HEAD, OPTIONS, TRACE)
// to a plain http:// upstream take the direct path (see Upstream).
func NewUpstreamTransport(jobs int, timeout time.Duration) *Upstream {
	return &Upstream{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          max(jobs, 256),
		MaxIdleConnsPerHost:   max(jobs, 64),
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: expectContinueTimeout,
		ResponseHeaderTimeout: timeout,
		DisableCompression:    true,
	}}
}

// expectContinueTimeout is how long the upstream transport waits for 100
// Continue before it sends a body anyway.
const expectContinueTimeout = time.Second

// Limits of the server NewServer returns, against clients that
// misbehave: a request's headers may take at most MaxHeaderBytes (a
// larger one is answered 431) and ReadHeaderTimeout to arrive (a client
// that sends them a byte at a time, slowloris, is cut off); an idle
// connection is closed after IdleTimeout; a client that takes no byte of
// its answer for the proxy's ClientTimeout is cut off (stall.go).
const (
	MaxHeaderBytes    = 64 << 10
	ReadHeaderTimeout = 10 * time.Second
	IdleTimeout       = 2 * time.Minute
)

// Server is the server NewServer returns: plain bodiless HTTP/1.1
// requests (most of a proxy's) are served by a loop of its own, every
// other connection by Server.HTTP (see leanhttp.Server).
type Server = leanhttp.Server

// NewServer returns a Server that serves p with the limits above, and
// logs nothing (the server's own messages about clients, such as bad TLS
// or broken connections, are not the proxy's to print).
func NewServer(p *Proxy) *Server {
	return &Server{HTTP: &http.Server{Handler: p, MaxHeaderBytes: MaxHeaderBytes, ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout: IdleTimeout, ErrorLog: log.New(io.Discard, "", 0)}, WriteIdleTimeout: p.opts.ClientTimeout}
}
