package proxy

import (
	"errors"
	"net"
	"net/url"
	"strconv"
)

// ParseUpstream checks the URL of an upstream: http or https, a host, no
// credentials (clients send their own), no fragment.
func ParseUpstream(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, errors.New("want a URL such as https://api.example.com")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("want an http:// or https:// URL, such as https://api.example.com")
	case u.Host == "":
		return nil, errors.New("no host: want a URL such as https://api.example.com")
	case u.User != nil:
		return nil, errors.New("credentials in the URL are not sent by a reverse proxy: leave them out and let the client send its own")
	case u.Fragment != "":
		return nil, errors.New("want no #fragment")
	}
	return u, nil
}

// IsLoopback reports whether host names only this machine.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LoopsBack reports whether a request sent to upstream would come back to
// the proxy listening at addr: the same port, and a host that is the
// address listened on, or a loopback one when listening on every address
// (localhost counting as 127.0.0.1 and ::1). Such a proxy would send each
// request to itself, admitting it again, without end. A host name other
// than localhost is not resolved: it is taken for another machine.
func LoopsBack(upstream *url.URL, addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	if !ok || upstreamPort(upstream) != ta.Port {
		return false
	}
	host := upstream.Hostname()
	if host == "localhost" {
		return ta.IP.IsUnspecified() || ta.IP.Equal(net.IPv4(127, 0, 0, 1)) || ta.IP.Equal(net.IPv6loopback)
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.Equal(ta.IP) || ta.IP.IsUnspecified() && ip.IsLoopback())
}

// upstreamPort returns the port requests to u go to: its own, or its
// scheme's.
func upstreamPort(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}
