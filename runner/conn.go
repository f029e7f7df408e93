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

// HTTPRetryDelay is how long a failed attempt of a request waits before
// its retry is admitted (Options.RetryDelay): 250ms, doubling with each
// attempt up to 30s, for an attempt whose connection failed
// (HTTPInfo.Conn), whose server failed (a 5xx other than 503, 408, 425)
// or whose body was cut short; nothing for a 429 or 503, or an answer
// that paused the backend (HTTPInfo.PauseUntil), which holds every
// admission already, and for a job that is not a request. A server that
// fails at once was sent every retry at once, as fast as the rules allowed.
func HTTPRetryDelay(r *Result) time.Duration {
	h := r.HTTP
	if h == nil || h.StatusCode == http.StatusTooManyRequests || h.StatusCode == http.StatusServiceUnavailable || !h.PauseUntil.IsZero() {
		return 0
	}
	return min(250*time.Millisecond<<min(max(r.Job.Attempt, 1)-1, 8), 30*time.Second)
}
