package redact

import "strings"

// opaqueSchemes are URI schemes written without "//", whose addresses
// read as user:password@host (mailto:bob@example.com): the word before
// their ':' is no user name.
var opaqueSchemes = map[string]bool{
	"mailto": true, "sip": true, "sips": true, "xmpp": true, "im": true, "pres": true,
	"tel": true, "acct": true, "news": true, "urn": true,
}

// isBareUserinfoURL reports whether a, one argument, is a URL without a
// scheme that starts with a user name and a password, as curl and wget
// take them: user:password@host, or user:@host (an API key), the host a
// name, an IPv4 or an [IPv6] address, then an optional port and, after
// '/', '?' or '#', anything. Only a user name with a ':' after it makes
// such a URL, so that e-mail addresses (bob@example.com), ssh and git
// addresses (deploy@host, git@github.com:org/repo) and image digests
// (nginx:1.25@sha256:...) are left alone, and so are opaque URIs such as
// mailto:bob@example.com. A word of another kind with a ':' before its
// '@' and a host after it (From:bob@example.com) is taken for one.
//
// Some words look the same and are no URL: a version (pkg:foo@1.2, whose
// host would be all digits without being an IPv4 address), and, where
// the host is one label alone, a time (10:30@home, digits on both sides
// of the ':') and the value of a name=value or --flag=value
// (time=12:00@UTC, --label=app:web@v1). Such words are taken for URLs
// only when the host says so: a dotted name, an address, localhost, or a
// port or a path after it.
func isBareUserinfoURL(a string) bool {
	if strings.Contains(a, "://") {
		return false
	}
	end := strings.IndexAny(a, "/?#")
	if end < 0 {
		end = len(a)
	}
	authority := a[:end]
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return false
	}
	user, pass, ok := strings.Cut(authority[:at], ":")
	if !ok {
		return false
	}
	value := false // the value of name=value
	if i := strings.LastIndexByte(user, '='); i >= 0 {
		user, value = user[i+1:], true
	}
	if !isUserName(user) || opaqueSchemes[strings.ToLower(user)] {
		return false
	}
	for i := 0; i < len(pass); i++ {
		if pass[i] <= ' ' || pass[i] == 0x7f {
			return false
		}
	}
	host, port, ok := splitHostPort(authority[at+1:])
	switch {
	case !ok:
		return false
	case port || end < len(a) || strings.HasPrefix(host, "[") || host == "localhost":
		return true
	case isDottedQuad(host):
		return true
	}
	labels := strings.Split(host, ".")
	switch {
	case isDigits(labels[len(labels)-1]):
		return false // a version, not a name: its last label has a letter
	case len(labels) > 1:
		return true
	}
	// One label alone: a host, unless the word is a value or a time.
	return !value && !(isDigits(user) && pass != "" && isDigits(pass))
}

// isDottedQuad reports whether s is an IPv4 address in its dotted form.
func isDottedQuad(s string) bool {
	labels := strings.Split(s, ".")
	if len(labels) != 4 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 3 || !isDigits(l) {
			return false
		}
	}
	return true
}

// isUserName reports whether s may be the user name of a URL as people
// write them: letters, digits and "-._~%+!$&*,;=", not empty.
func isUserName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isTokenChar(c) && strings.IndexByte(".~%+!$&*,;=", c) < 0 {
			return false
		}
	}
	return true
}

// splitHostPort reads s as a host, a name (labels of letters, digits,
// '-' and '_' between dots) or an IPv6 address in brackets, with an
// optional port of 1 to 5 digits; port says whether it had one.
func splitHostPort(s string) (host string, port, ok bool) {
	host, p := s, ""
	if strings.HasPrefix(s, "[") {
		i := strings.IndexByte(s, ']')
		if i < 0 {
			return "", false, false
		}
		for _, c := range s[1:i] {
			if !strings.ContainsRune("0123456789abcdefABCDEF:.%", c) {
				return "", false, false
			}
		}
		host, p = s[:i+1], s[i+1:]
		if p != "" && p[0] != ':' {
			return "", false, false
		}
		if p != "" {
			p = p[1:]
			if p == "" {
				return "", false, false
			}
		}
	} else if i := strings.IndexByte(s, ':'); i >= 0 {
		host, p = s[:i], s[i+1:]
		if p == "" {
			return "", false, false
		}
	}
	if len(p) > 5 || !isDigits(p) {
		return "", false, false
	}
	if strings.HasPrefix(host, "[") {
		return host, p != "", true
	}
	if host == "" {
		return "", false, false
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" {
			return "", false, false
		}
		for i := 0; i < len(label); i++ {
			if !isTokenChar(label[i]) {
				return "", false, false
			}
		}
	}
	return host, p != "", true
}
