package proxy

import (
	"net"
	"net/http"
	"time"
)

// NewUpstreamTransport returns the transport a Proxy sends requests
// upstream with: connections kept alive for jobs requests at once (at
// least 64 when jobs is 0, no cap), proxies from the environment, HTTP/2
// when the upstream offers it, bodies and Accept-Encoding as the client
// sent them (no transparent compression), and timeout (0: none) for the
// upstream's response headers.
func NewUpstreamTransport(jobs int, timeout time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          max(jobs, 256),
		MaxIdleConnsPerHost:   max(jobs, 64),
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: timeout,
		DisableCompression:    true,
	}
}
