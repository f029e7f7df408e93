package proxy

import (
	"errors"
	"net"
	"net/url"
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
