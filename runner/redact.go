package runner

import (
	"errors"
	"net/url"
	"slices"
	"strings"
)

// Redacted replaces credentials wherever pace shows a URL, a header or an
// error.
const Redacted = "REDACTED"

// minSecretLen is the shortest value a Redactor replaces in free text:
// replacing every "a" or "12" in a message would garble it and protect
// nothing.
const minSecretLen = 3

// IsSecretHeader reports whether the value of the header called name is a
// credential: Authorization, Proxy-Authorization, Cookie, Set-Cookie, and
// any name ending in -Key, -Token, -Secret or -Password (X-Api-Key,
// X-Auth-Token, ...), whatever the case.
func IsSecretHeader(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	for _, suf := range []string{"-key", "-token", "-secret", "-password", "_key", "_token", "_secret"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}

// isSecretParam reports whether a query parameter called name carries a
// credential (api_key=..., access_token=..., sig=...).
func isSecretParam(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "key", "apikey", "token", "auth", "password", "passwd", "pass", "secret",
		"sig", "signature", "credential", "credentials", "session", "sessionid":
		return true
	}
	for _, suf := range []string{"_key", "-key", "_token", "-token", "_secret", "-secret", "_password", "-password", "_signature"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}

// RedactURL returns u as text with its credentials replaced by Redacted:
// the userinfo (user name and password) and the values of query
// parameters that carry credentials (api_key, access_token, sig, ...).
// The order of the parameters is kept.
func RedactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	if c.User != nil {
		c.User = url.User(Redacted)
	}
	c.RawQuery = redactQuery(c.RawQuery)
	c.ForceQuery = u.ForceQuery
	return c.String()
}

// redactQuery replaces the values of credential parameters in a raw query.
func redactQuery(q string) string {
	if q == "" {
		return q
	}
	parts := strings.Split(q, "&")
	changed := false
	for i, p := range parts {
		k, _, hasValue := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if hasValue && isSecretParam(name) {
			parts[i] = k + "=" + Redacted
			changed = true
		}
	}
	if !changed {
		return q
	}
	return strings.Join(parts, "&")
}

// RedactRawURL is RedactURL for text that may not parse as a URL, such as
// a bad input line: if it parses it is redacted as RedactURL does,
// otherwise whatever lies between "://" and the last '@' of the authority
// is replaced.
func RedactRawURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		if u.Opaque != "" { // "user:pass@host" without "//": a scheme-less authority
			return redactAuthority(s)
		}
		return RedactURL(u)
	}
	return redactAuthority(s)
}

// redactAuthority replaces the userinfo of s without parsing it: the text
// from the start (or after "://") to the last '@' before the path.
func redactAuthority(s string) string {
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + 3
	}
	rest := s[start:]
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		if q := strings.IndexByte(s, '?'); q >= 0 {
			return s[:q+1] + redactQuery(s[q+1:])
		}
		return s
	}
	out := s[:start] + Redacted + rest[at:]
	if q := strings.IndexByte(out, '?'); q >= 0 {
		out = out[:q+1] + redactQuery(out[q+1:])
	}
	return out
}

// RedactText redacts every URL found in free text, such as an error
// message from net/http: each "scheme://..." token up to the next space
// or quote goes through RedactRawURL.
func RedactText(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i
		for start > 0 && isSchemeChar(s[start-1]) {
			start--
		}
		end := i + 3
		for end < len(s) && !isURLStop(s[end]) {
			end++
		}
		b.WriteString(s[:start])
		b.WriteString(RedactRawURL(s[start:end]))
		s = s[end:]
	}
}

func isSchemeChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

func isURLStop(c byte) bool {
	return c <= ' ' || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`'
}

// Redactor removes known credentials from text: the values of secret
// headers, the parts of a URL's userinfo, secret query values, and their
// percent-encoded forms. It also redacts every URL in the text (see
// RedactText). The zero value redacts URLs only. A Redactor is not safe
// for concurrent use while secrets are being added.
type Redactor struct {
	secrets []string
}

// Add records secret, and each word of it, so that "Bearer abc123" hides
// abc123 wherever it appears. Values shorter than three bytes are ignored.
func (r *Redactor) Add(secret string) {
	r.add(secret)
	if f := strings.Fields(secret); len(f) > 1 {
		for _, w := range f[1:] { // the first word is a scheme: Bearer, Basic
			r.add(w)
		}
	}
}

func (r *Redactor) add(s string) {
	if len(s) < minSecretLen {
		return
	}
	for _, v := range []string{s, url.QueryEscape(s), url.PathEscape(s)} {
		if !slices.Contains(r.secrets, v) {
			r.secrets = append(r.secrets, v)
		}
	}
}

// AddURL records the credentials in u: user name, password and the values
// of secret query parameters.
func (r *Redactor) AddURL(u *url.URL) {
	if u == nil {
		return
	}
	if u.User != nil {
		r.add(u.User.Username())
		if p, ok := u.User.Password(); ok {
			r.add(p)
		}
	}
	for name, vals := range u.Query() {
		if isSecretParam(name) {
			for _, v := range vals {
				r.add(v)
			}
		}
	}
}

// String returns s with every URL redacted and every known secret
// replaced by Redacted.
func (r *Redactor) String(s string) string {
	s = RedactText(s)
	if r == nil {
		return s
	}
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, v, Redacted)
	}
	return s
}

// Error returns err with a redacted message (see String); errors.Is and
// errors.As still see the original chain. It returns nil for nil.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) && ue.URL != "" {
		msg = strings.ReplaceAll(msg, ue.URL, RedactRawURL(ue.URL))
	}
	red := r.String(msg)
	if red == err.Error() {
		return err
	}
	return &redactedError{msg: red, err: err}
}

// redactedError shows a redacted message but unwraps to the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
