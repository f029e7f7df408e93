package proxy

import (
	"strings"
)

// Cookies the upstream sets are rewritten for the client's side of the
// proxy, as nginx's proxy_cookie_domain, proxy_cookie_path and
// proxy_cookie_flags do: a client talks plain HTTP to the proxy's address,
// so it would drop a cookie whose Domain names the upstream (it does not
// match 127.0.0.1), never send back one marked Secure (it goes only over
// HTTPS), and send one whose Path is under --upstream's path only for
// paths the proxy maps elsewhere. A session cookie set at login was then
// lost, and every later request of the session failed upstream. So a
// Domain that the upstream's host is in is dropped (the cookie is the
// proxy host's), Secure is dropped, and a Path under --upstream's path
// loses that prefix. Cookies named __Secure- or __Host-, which a client
// takes only with Secure over HTTPS, and cookies for other domains are
// left as they are; the cookies the client sends back go upstream
// unchanged.

// clientCookie returns the Set-Cookie value v as the client of the proxy
// must see it, or v if it is not the upstream's to rewrite.
func (p *Proxy) clientCookie(v string) string {
	parts := strings.Split(v, ";")
	name, _, _ := strings.Cut(strings.TrimSpace(parts[0]), "=")
	if strings.HasPrefix(name, "__Secure-") || strings.HasPrefix(name, "__Host-") {
		return v
	}
	host := strings.ToLower(p.opts.Upstream.Hostname())
	base := strings.TrimSuffix(p.opts.Upstream.EscapedPath(), "/")
	kept := parts[:1]
	changed := false
	for _, a := range parts[1:] {
		key, val, _ := strings.Cut(strings.TrimSpace(a), "=")
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "domain":
			d := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(val), "."))
			if d == host || strings.HasSuffix(host, "."+d) {
				changed = true
				continue
			}
			return v // another domain's: the client drops it, as it would have
		case "secure":
			changed = true
			continue
		case "path":
			if path := strings.TrimSpace(val); base != "" && (path == base || strings.HasPrefix(path, base+"/")) {
				rest := path[len(base):]
				if rest == "" {
					rest = "/"
				}
				a, changed = " Path="+rest, true
			}
		}
		kept = append(kept, a)
	}
	if !changed {
		return v
	}
	return strings.Join(kept, ";")
}
