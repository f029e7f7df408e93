package fetch

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/pace-cli/pace/internal/redact"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/runner/internal/direct"
)

// defaultMaxRedirects is how many redirects a fetch follows.
const defaultMaxRedirects = 10

// errTooManyRedirects is the redirect policy's refusal.
var errTooManyRedirects = errors.New("too many redirects")

// errRedirectScheme is the redirect policy's refusal of a redirect to
// another scheme than http or https (file:, ftp:, javascript:): net/http
// cannot send it, and a server that answers so answers so again, so the
// item fails without being sent again.
var errRedirectScheme = errors.New("not followed: only redirects to http and https are")

// ClientOptions configure NewClient.
type ClientOptions struct {
	// Conns is how many connections per host are kept open for reuse;
	// set it to the jobs in flight. Values below 2 mean 2.
	Conns int
	// Insecure skips the verification of servers' certificates.
	Insecure bool
	// MaxRedirects caps the redirects followed; 0 means
	// defaultMaxRedirects, negative follows none.
	MaxRedirects int
	// TLS, if set, is the base TLS configuration (cloned), for instance
	// with extra root certificates.
	TLS *tls.Config
}

// NewClient returns the client an Executor wants: one connection pool
// sized to the jobs in flight, keep-alive, HTTP/2 when the server offers
// it over TLS, proxies from the environment (HTTPS_PROXY, HTTP_PROXY,
// NO_PROXY), and a redirect policy that follows at most MaxRedirects,
// drops secret headers (see redact.IsSecretHeader) when a redirect leaves
// the original origin or goes from https to http, and sends a Referer as a
// browser's strict-origin-when-cross-origin policy does: the whole URL to
// the same origin, only the origin to another one, nothing from https to
// http. So a secret in a query (api_key=...) never reaches another host.
// Bodiless requests to plain http:// servers that no proxy stands in front
// of go on the caller's goroutine (see direct.Transport), with gzip asked
// for and decompressed as http.Transport does.
func NewClient(opts ClientOptions) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	conns := max(opts.Conns, 2)
	t.MaxIdleConnsPerHost = conns
	t.MaxIdleConns = max(conns, 100)
	if opts.TLS != nil {
		t.TLSClientConfig = opts.TLS.Clone()
	}
	if opts.Insecure {
		if t.TLSClientConfig == nil {
			t.TLSClientConfig = &tls.Config{}
		}
		t.TLSClientConfig.InsecureSkipVerify = true
	}
	t.ForceAttemptHTTP2 = true
	maxRedirects := opts.MaxRedirects
	if maxRedirects == 0 {
		maxRedirects = defaultMaxRedirects
	}
	return &http.Client{
		Transport: &direct.Transport{Transport: t},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if maxRedirects < 0 {
				return http.ErrUseLastResponse
			}
			if len(via) > maxRedirects {
				return fmt.Errorf("%w (followed %d)", errTooManyRedirects, maxRedirects)
			}
			if s := strings.ToLower(req.URL.Scheme); s != "http" && s != "https" {
				return errRedirectScheme
			}
			first, prev := via[0], via[len(via)-1]
			if !sameOrigin(req.URL, first.URL) || first.URL.Scheme == "https" && req.URL.Scheme != "https" {
				for name := range req.Header {
					if redact.IsSecretHeader(name) {
						req.Header.Del(name)
					}
				}
			}
			setReferer(req, prev.URL)
			return nil
		},
	}
}

// setReferer sets req's Referer, the URL it was redirected from, by the
// strict-origin-when-cross-origin policy: the whole URL (without user
// info and fragment) to the same origin, only the origin to another, and
// nothing from https to http.
func setReferer(req *http.Request, from *url.URL) {
	req.Header.Del("Referer")
	switch {
	case from.Scheme == "https" && req.URL.Scheme != "https":
	case sameOrigin(req.URL, from):
		u := *from
		u.User, u.Fragment, u.RawFragment = nil, "", ""
		req.Header.Set("Referer", u.String())
	default:
		req.Header.Set("Referer", from.Scheme+"://"+from.Host+"/")
	}
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// port returns u's port, or the scheme's default.
func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// clientError strips the *url.Error that http.Client wraps around every
// failure (its message repeats the method and URL already in the job's
// error) but keeps the URL if a redirect led elsewhere. Redirect loops,
// redirects to other schemes than http and https, and certificate
// failures become permanent.
func clientError(err error, orig *url.URL, red *redact.Redactor) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	inner := ue.Err
	if ue.URL != "" && red.RawURL(ue.URL) != red.URL(orig) {
		inner = fmt.Errorf("after redirect to %s: %w", red.RawURL(ue.URL), inner)
	}
	var certErr *tls.CertificateVerificationError
	if errors.Is(err, errTooManyRedirects) || errors.Is(err, errRedirectScheme) || errors.As(err, &certErr) {
		inner = runner.Permanent(inner)
	}
	return inner
}
