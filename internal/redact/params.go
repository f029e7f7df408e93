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
	case depth < maxNesting && strings.Contains(value, "%"):
		b.WriteString(name)
		b.WriteByte('=')
		r.writeEscapedURL(b, value, depth, seen)
	default:
		b.WriteString(p)
	}
}

// writeEscapedURL writes value, a parameter value, to b. If value
// percent-decodes to text holding a URL (next=https%3A%2F%2Fu%3Apw%40h),
// that URL's credentials are hidden where they stand in value, still
// escaped: the rest of value is written byte for byte. seen is called
// with each hidden value both as written in value and as the decoded URL
// holds it. value is decoded once; a URL escaped twice is found by the
// same rule one level down.
func (r *Redactor) writeEscapedURL(b *strings.Builder, value string, depth int, seen func(string)) {
	dec, at := unescape(value)
	if !strings.Contains(dec, "://") {
		b.WriteString(value)
		return
	}
	var hidden []string
	out := r.rawURL(dec, depth+1, func(v string) { hidden = append(hidden, v) })
	spans, ok := hiddenSpans(dec, out, hidden)
	if !ok {
		hide(b, value, seen) // cannot tell where: hide it all
		return
	}
	done := 0 // value[:done] is written
	for k, sp := range spans {
		start, end := at[sp[0]], at[sp[1]]
		b.WriteString(value[done:start])
		hide(b, value[start:end], seen)
		if seen != nil && hidden[k] != value[start:end] {
			seen(hidden[k]) // as the URL in value holds it
		}
		done = end
	}
	b.WriteString(value[done:])
}

// unescape returns s with its %XX escapes decoded and '+' read as a
// space, as in a query, and where each byte of the result starts in s:
// at[i] for byte i, and at[len(dec)] = len(s). A '%' not followed by two
// hex digits stands for itself.
func unescape(s string) (dec string, at []int) {
	d := make([]byte, 0, len(s))
	at = make([]int, 0, len(s)+1)
	for i := 0; i < len(s); {
		at = append(at, i)
		switch c := s[i]; {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			d = append(d, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 3
		case c == '+':
			d = append(d, ' ')
			i++
		default:
			d = append(d, c)
			i++
		}
	}
	return string(d), append(at, len(s))
}

// hiddenSpans returns where in dec the values of hidden stand, in order,
// given out, dec with each of them replaced by Placeholder in that order
// (as rawURL writes it and calls seen). Each span is [start, end) in dec.
// It reports false if out cannot be read that way.
func hiddenSpans(dec, out string, hidden []string) ([][2]int, bool) {
	spans := make([][2]int, 0, len(hidden))
	i, o := 0, 0 // dec[:i] and out[:o] are accounted for
	for _, v := range hidden {
		// The text before the value is the same in both, so the value
		// starts at most where they first differ. The first place that
		// fits is taken (a value that is Placeholder itself fits
		// anywhere); the check at the end catches a wrong one.
		same := 0
		for i+same < len(dec) && o+same < len(out) && dec[i+same] == out[o+same] {
			same++
		}
		found := false
		for p := 0; p <= same; p++ {
			if strings.HasPrefix(dec[i+p:], v) && strings.HasPrefix(out[o+p:], Placeholder) {
				spans = append(spans, [2]int{i + p, i + p + len(v)})
				i, o, found = i+p+len(v), o+p+len(Placeholder), true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return spans, dec[i:] == out[o:]
}

// isHex reports whether c is a hexadecimal digit.
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// unhex returns the value of the hexadecimal digit c.
func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
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
