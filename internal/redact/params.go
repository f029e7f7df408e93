package redact

import (
	"net/url"
	"strings"
)

// writeParams writes q, a query or a fragment, to b with the values of
// secret parameters hidden. Parameters are separated by '&'. A secret
// parameter's value runs to the next '&', so a value holding ';' is hidden
// whole; a parameter whose name is not secret may hold more parameters
// separated by ';' (a=1;token=x, or &amp;token=x from HTML).
func (r *Redactor) writeParams(b *strings.Builder, q string, depth int, seen func(string)) {
	for i := 0; ; i++ {
		p, more, ok := strings.Cut(q, "&")
		if i > 0 {
			b.WriteByte('&')
		}
		r.writeParam(b, p, true, depth, seen)
		if !ok {
			return
		}
		q = more
	}
}

// writeParam writes the parameter p to b, hiding its value if its name is
// secret. Otherwise, if split is set, the ';'-separated parameters in p
// are written one by one, and a URL in its value is redacted.
func (r *Redactor) writeParam(b *strings.Builder, p string, split bool, depth int, seen func(string)) {
	name, value, ok := strings.Cut(p, "=")
	switch {
	case !ok:
		b.WriteString(p)
	case r.isSecretName(paramName(name)):
		b.WriteString(name)
		b.WriteByte('=')
		hide(b, value, seen)
	case split && strings.Contains(p, ";"):
		for i, sub := range strings.Split(p, ";") {
			if i > 0 {
				b.WriteByte(';')
			}
			r.writeParam(b, sub, false, depth, seen)
		}
	case depth < maxNesting && strings.Contains(value, "://"):
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(r.rawURL(value, depth+1, seen))
	default:
		b.WriteString(p)
	}
}

// writePath writes path to b with the values of secret path parameters
// hidden: the name=value pairs after a ';' in a segment
// (/app;jsessionid=...;v=2/x). A value runs to the next ';' or '/'.
func (r *Redactor) writePath(b *strings.Builder, path string, seen func(string)) {
	for {
		i := strings.IndexByte(path, ';')
		if i < 0 {
			b.WriteString(path)
			return
		}
		b.WriteString(path[:i+1])
		path = path[i+1:]
		end := strings.IndexAny(path, ";/")
		if end < 0 {
			end = len(path)
		}
		r.writeParam(b, path[:end], false, maxNesting, seen)
		path = path[end:]
	}
}

// paramName returns the name of a parameter, as written before its '=',
// in the form the names are matched in: from after its last '/', '?' or
// '#' (a fragment such as #/callback?code=... holds a path), then
// percent-decoded and lower-case.
func paramName(raw string) string {
	if i := strings.LastIndexAny(raw, "/?#"); i >= 0 {
		raw = raw[i+1:]
	}
	if strings.ContainsAny(raw, "%+") {
		if dec, err := url.QueryUnescape(raw); err == nil {
			raw = dec
		}
	}
	return strings.ToLower(raw)
}
