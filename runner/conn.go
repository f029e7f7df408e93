package runner

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"syscall"
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
