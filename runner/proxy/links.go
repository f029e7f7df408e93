package proxy

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Links to the upstream in an answer's headers are rewritten to the
// proxy, as nginx's proxy_redirect does for Location: a client follows a
// redirect, a created resource's Location or the next page of a Link
// header (GitHub's pagination) through the proxy, admitted under the
// rules, instead of straight to the upstream, where the call would go
// over them unseen. A URL is the upstream's when it has its scheme and
// host (the default port spelt or not) and a path the proxy maps onto
// (the upstream's path, then anything): the proxy's URL for it is
// "http://" + the host the client addressed (clientHost) + the rest of the path, with its
// query (less the upstream's own query, which the proxy adds back) and
// fragment. A path-absolute reference ("/v1/x") is the upstream's path
// too, when --upstream has one. Other URLs (another host, a relative path)
// are left as they are: the first is no call to the upstream, the second
// resolves against the proxy's URL already.
//
// Only these headers are read: links in bodies (a JSON "next" URL) still
// name the upstream, and a client that follows them bypasses the proxy.

// clientHost returns the host the client addressed: its Host, or for a
// request without one (HTTP/1.0), the address it connected to.
func clientHost(r *http.Request) string {
	if r.Host != "" {
		return r.Host
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return a.String()
	}
	return ""
}

// toClient rewrites the upstream's answer header h for the proxy's client
// at host (clientHost): its links to the upstream (above) and its cookies
// (clientCookie).
func (p *Proxy) toClient(h http.Header, host string) {
	if host != "" {
		link := func(v string) string {
			if u, ok := p.toProxy(strings.TrimSpace(v), host); ok {
				return u
			}
			return v
		}
		rewriteField(h, "Location", link)
		rewriteField(h, "Content-Location", link)
		rewriteField(h, "Link", func(v string) string { return p.rewriteLinkValue(v, host) })
	}
	rewriteField(h, "Set-Cookie", p.clientCookie)
}

// rewriteField replaces each value v of h's field k (canonical) by
// rewrite(v). The values are copied on the first change, never changed
// in place: the slice may be shared with another header.
func rewriteField(h http.Header, k string, rewrite func(string) string) {
	vv, ok := h[k]
	if !ok {
		return
	}
	var out []string
	for i, v := range vv {
		nv := rewrite(v)
		if nv != v && out == nil {
			out = append([]string(nil), vv...)
		}
		if out != nil {
			out[i] = nv
		}
	}
	if out != nil {
		h[k] = out
	}
}

// rewriteLinkValue rewrites the URI references of a Link field value
// (RFC 8288: `<uri>; rel="next", <uri>; rel="last"`), skipping quoted
// parameter values.
func (p *Proxy) rewriteLinkValue(v, host string) string {
	var b strings.Builder
	changed := false
	for i := 0; i < len(v); {
		c := v[i]
		switch c {
		case '"':
			// A quoted string, with backslash escapes: copied whole.
			j := i + 1
			for j < len(v) && v[j] != '"' {
				if v[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(v))
			b.WriteString(v[i:j])
			i = j
		case '<':
			end := strings.IndexByte(v[i+1:], '>')
			if end < 0 {
				b.WriteString(v[i:])
				i = len(v)
				continue
			}
			ref := v[i+1 : i+1+end]
			if u, ok := p.toProxy(ref, host); ok {
				ref, changed = u, true
			}
			b.WriteByte('<')
			b.WriteString(ref)
			b.WriteByte('>')
			i += end + 2
		default:
			b.WriteByte(c)
			i++
		}
	}
	if !changed {
		return v
	}
	return b.String()
}

// toProxy returns the proxy's URL, at host, for ref if ref is a URL of the
// upstream (see toClient).
func (p *Proxy) toProxy(ref, host string) (string, bool) {
	up := p.opts.Upstream
	if ref == "" || strings.HasPrefix(ref, "//") {
		return "", false
	}
	abs := ref[0] != '/'
	if !abs && strings.Trim(up.Path, "/") == "" {
		return "", false // the proxy's path is the upstream's
	}
	u, err := url.Parse(ref)
	if err != nil || u.Opaque != "" || u.User != nil {
		return "", false
	}
	if abs && (!strings.EqualFold(u.Scheme, up.Scheme) || !sameHost(u, up)) {
		return "", false
	}
	if !abs && (u.Scheme != "" || u.Host != "") {
		return "", false
	}
	rest, ok := underPath(up, u)
	if !ok {
		return "", false
	}
	query := u.RawQuery
	if up.RawQuery != "" {
		if query == up.RawQuery {
			query = ""
		} else if q, ok := strings.CutPrefix(query, up.RawQuery+"&"); ok {
			query = q
		}
	}
	out := url.URL{Scheme: "http", Host: host, Path: rest.Path, RawPath: rest.RawPath, RawQuery: query, Fragment: u.Fragment, RawFragment: u.RawFragment}
	return out.String(), true
}

// sameHost reports whether u and up name one host and port, a missing
// port being the scheme's default.
func sameHost(u, up *url.URL) bool {
	port := func(x *url.URL) string {
		if p := x.Port(); p != "" {
			return p
		}
		if strings.EqualFold(x.Scheme, "https") {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(u.Hostname(), up.Hostname()) && port(u) == port(up)
}

// underPath returns the path a client asks the proxy for to reach u's
// path on the upstream (joinURLPath's inverse), if there is one: u's path
// with the upstream's path cut off its front, at a slash, such that the
// proxy sends exactly u's path for it.
func underPath(up, u *url.URL) (*url.URL, bool) {
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	rest, ok := strings.CutPrefix(path, strings.TrimSuffix(up.EscapedPath(), "/"))
	if !ok || rest == "" || rest[0] != '/' {
		return nil, false
	}
	r, err := url.Parse(rest)
	if err != nil || r.Scheme != "" || r.Host != "" {
		return nil, false
	}
	sent, raw := joinURLPath(up, r)
	if (&url.URL{Path: sent, RawPath: raw}).EscapedPath() != path {
		return nil, false
	}
	return &url.URL{Path: r.Path, RawPath: r.RawPath}, true
}
