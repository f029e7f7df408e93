package runner

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"syscall"
	"time"
)

// ConnCause names why no HTTP response came, for HTTPInfo.Conn: "refused",
// "reset", "dns", "tls" or "network". (A timeout is the caller's to name:
// only it knows its deadline.)
func ConnCause(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.As(err, &certErr), errors.As(err, &recErr), errors.Is(err, http.ErrSchemeMismatch):
		return "tls"
	}
	return "network"
}

// ConnRetryDelay is how long a failed attempt waits before its retry is
// admitted (Options.RetryDelay): an attempt whose connection failed
// (HTTPInfo.Conn) is given 250ms, doubling with each attempt up to 30s; any
// other waits for nothing (a 429 or 503 has paused the backend already).
func ConnRetryDelay(r *Result) time.Duration {
	if r.HTTP == nil || r.HTTP.Conn == "" {
		return 0
	}
	return min(250*time.Millisecond<<min(r.Job.Attempt-1, 8), 30*time.Second)
}
