package redact

import (
	"net/url"
	"strings"
)

// maxNesting bounds how deep RawURL follows URLs held in parameter values
// (?next=https://user:pw@host/...).
const maxNesting = 3

// URL returns u as text with its credentials replaced by Placeholder. It
// is RawURL(u.String()), so a URL reads the same parsed or not. It returns
// "" for a nil u.
func (r *Redactor) URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	return r.RawURL(u.String())
}

// RawURL returns s, text meant as a URL of any scheme, with its
// credentials replaced by Placeholder:
//
//   - Userinfo: a password is replaced and the user name kept
//     (redis://user:REDACTED@host); a user name alone, usually a token, is
//     replaced whole (https://REDACTED@github.com), and so is a user name
//     with an empty password (https://sk_live_abc:@host) or an unescaped
//     '@' (https://me@example.com:pw@host).
//   - Parameters with secret names: their values are replaced in the query
//     (?api_key=REDACTED), the fragment
//     (#access_token=REDACTED&token_type=bearer) and path segments
//     (/app;jsessionid=REDACTED). Query and fragment parameters are
//     separated by '&' and also by ';'; a name matches whatever its case
//     and percent-encoding, and may follow a '/' or '?' in a fragment
//     (#/callback?code=REDACTED).
//   - A URL in the value of another parameter is redacted in turn, as
//     written (?next=https://u:pw@h/) or percent-encoded
//     (?next=https%3A%2F%2Fu%3Apw%40h%2F, which becomes
//     ?next=https%3A%2F%2Fu%3AREDACTED%40h%2F).
//
// Empty parameter values stay empty, and everything else is kept byte for
// byte: a URL without credentials comes back unchanged.
//
// RawURL reads the text rather than parsing it, so it also redacts URLs
// that url.Parse rejects. The authority starts after the first "://" (or
// at the start of s when there is none, as in "user:pass@host/path") and
// ends at the first '/', '?' or '#'; the userinfo ends at its last '@'.
// When the authority has no '@', a password with an unescaped '/', '?' or
// '#' may have ended it early. Then the userinfo runs to the last '@' of s
// if the authority cannot be host:port ("redis://u:pa/ss@host"), or to the
// last '@' before the next '/' if its "port" is a number
// ("redis://u:12#ss@host", but not "http://host:8080/users/bob@example.com").
func (r *Redactor) RawURL(s string) string {
	return r.rawURL(s, 0, nil)
}

// rawURL is RawURL. It calls seen, if not nil, with each value it hides,
// as written; depth counts the URLs whose parameters hold s.
func (r *Redactor) rawURL(s string, depth int, seen func(string)) string {
	if !strings.ContainsAny(s, "@=") && !mayHoldPathToken(s) {
		return s // no userinfo, no parameters, no token in the path
	}
	start := authorityStart(s)
	rest := s[start:]
	var b strings.Builder
	b.Grow(len(s) + len(Placeholder))
	b.WriteString(s[:start])
	if at := userinfoEnd(rest); at >= 0 {
		writeUserinfo(&b, rest[:at], seen)
		rest = rest[at:]
	}
	host := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		host = i
	}
	b.WriteString(rest[:host])
	hostport := rest[:host]
	rest = rest[host:]

	rest, frag, hasFrag := strings.Cut(rest, "#")
	path, query, hasQuery := strings.Cut(rest, "?")
	r.writePath(&b, hidePathTokens(hostport, path, seen), seen)
	if hasQuery {
		b.WriteByte('?')
		r.writeParams(&b, query, depth, seen)
	}
	if hasFrag {
		b.WriteByte('#')
		r.writeParams(&b, frag, depth, seen)
	}
	return b.String()
}

// authorityStart returns the index in s where its authority starts: after
// a leading "//", or after the first "://" when only scheme-like text
// precedes it (no '/', '?', '#' or '@'); otherwise 0, for text such as
// "user:pass@host/path" that lacks a scheme.
func authorityStart(s string) int {
	if strings.HasPrefix(s, "//") {
		return 2
	}
	i := strings.Index(s, "://")
	if i < 0 || strings.ContainsAny(s[:i], "/?#@") {
		// "http:/user:pw@host", a slash short: what follows the one
		// slash is taken for the authority, so that a password there
		// is hidden too.
		if i = strings.Index(s, ":/"); i > 0 && !strings.HasPrefix(s[i:], "://") && !strings.ContainsAny(s[:i], "/?#@") {
			return i + 2
		}
		return 0
	}
	return i + 3
}

// userinfoEnd returns the index of the '@' that ends the userinfo at the
// start of rest (a URL from its authority on), or -1 if there is no
// userinfo. See RawURL for the rules.
func userinfoEnd(rest string) int {
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		return strings.LastIndexByte(rest, '@')
	}
	hostport := rest[:end]
	if at := strings.LastIndexByte(hostport, '@'); at >= 0 {
		return at
	}
	_, port, ok := strings.Cut(hostport, ":")
	if !ok || strings.HasPrefix(hostport, "[") { // no password, or an IPv6 literal
		return -1
	}
	if !isDigits(port) {
		return strings.LastIndexByte(rest, '@')
	}
	// host:port, or user:password with a password such as "12#ss".
	if rest[end] == '/' {
		return -1
	}
	tail := rest[end:]
	if i := strings.IndexByte(tail, '/'); i >= 0 {
		tail = tail[:i]
	}
	if at := strings.LastIndexByte(tail, '@'); at >= 0 {
		return end + at
	}
	return -1
}

// isDigits reports whether s holds only ASCII digits (or nothing).
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// writeUserinfo writes the userinfo ui to b: "user:" and Placeholder when
// it holds a password, Placeholder alone when it holds a user name only
// (or with an empty password, as curl -u sk_live_...: puts an API key
// there) and ui itself when it holds neither. A user name with an
// unescaped '@' is hidden with the password: a URL cannot hold one, so
// where the user name ends is a guess.
func writeUserinfo(b *strings.Builder, ui string, seen func(string)) {
	user, pass, _ := strings.Cut(ui, ":")
	switch {
	case user == "" && pass == "":
		b.WriteString(ui) // "" or ":"
	case pass != "" && !strings.Contains(user, "@"):
		b.WriteString(user)
		b.WriteByte(':')
		hide(b, pass, seen)
	default:
		hide(b, ui, seen)
	}
}

// hide writes Placeholder to b in place of v, and calls seen with v. An
// empty v hides nothing and stays empty.
func hide(b *strings.Builder, v string, seen func(string)) {
	if v == "" {
		return
	}
	b.WriteString(Placeholder)
	if seen != nil {
		seen(v)
	}
}
