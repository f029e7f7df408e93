package direct

import (
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"slices"
	"strings"
)

// appendHead appends to b the head of req as (*http.Request).Write writes
// it, byte for byte, for the requests the direct path sends most: GET,
// HEAD, OPTIONS or TRACE, without a body, Close or trailers, to a plain
// ASCII host, with no trace hook for each field. It returns ok false for
// any other request, which goes through Request.Write. keys is scratch
// space for the header's names. Request.Write formats its lines with
// fmt and allocates five times; this does neither.
func appendHead(b []byte, keys *[]string, req *http.Request, trace *httptrace.ClientTrace) (_ []byte, ok bool) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
	default:
		return b, false
	}
	u := req.URL
	if req.Close || req.Trailer != nil || len(req.TransferEncoding) > 0 || req.ContentLength != 0 ||
		(req.Body != nil && req.Body != http.NoBody) || u == nil || u.Opaque != "" ||
		(trace != nil && trace.WroteHeaderField != nil) {
		return b, false
	}
	host := req.Host
	if host == "" {
		host = u.Host
	}
	if !plainHost(host) {
		return b, false // punycode, a zone, or a Host Request.Write would drop: its way
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if hasCTL(path) || hasCTL(u.RawQuery) {
		return b, false // Request.Write's error
	}
	b = append(b, req.Method...)
	b = append(b, ' ')
	b = append(b, path...)
	if u.ForceQuery || u.RawQuery != "" {
		b = append(b, '?')
		b = append(b, u.RawQuery...)
	}
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	ua := "Go-http-client/1.1"
	if v, has := req.Header["User-Agent"]; has {
		ua = ""
		if len(v) > 0 {
			ua = v[0]
		}
	}
	if ua != "" {
		b = append(b, "User-Agent: "...)
		b = appendValue(b, ua)
		b = append(b, "\r\n"...)
	}
	ks := (*keys)[:0]
	for k := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		if !validName(k) {
			continue // dropped, as Request.Write drops it
		}
		for _, v := range req.Header[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			b = appendValue(b, v)
			b = append(b, "\r\n"...)
		}
	}
	clear(ks)
	*keys = ks[:0]
	return append(b, "\r\n"...), true
}

// appendValue appends a header value as Request.Write writes it: line
// breaks made spaces, trimmed of spaces and tabs.
func appendValue(b []byte, v string) []byte {
	v = textproto.TrimString(v)
	start := len(b)
	b = append(b, v...)
	for i := start; i < len(b); i++ {
		if b[i] == '\r' || b[i] == '\n' {
			b[i] = ' '
		}
	}
	return b
}

// plainHost reports whether h is a host and port that Request.Write
// sends as it is: ASCII letters, digits and the punctuation of names and
// addresses, no zone.
func plainHost(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_':
		default:
			return false
		}
	}
	return true
}

// hasCTL reports whether s holds a control character.
func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// validName reports whether k is a header field name (a token), as
// Request.Write checks it.
func validName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
