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
	if !ok || !isUserName(user) || opaqueSchemes[strings.ToLower(user)] {
		return false
	}
	for i := 0; i < len(pass); i++ {
		if pass[i] <= ' ' || pass[i] == 0x7f {
			return false
		}
	}
	return isHostPort(authority[at+1:])
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

// isHostPort reports whether s is a host, a name (labels of letters,
// digits, '-' and '_' between dots), an IPv4 address or an IPv6 one in
// brackets, with an optional port of 1 to 5 digits.
func isHostPort(s string) bool {
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		i := strings.IndexByte(s, ']')
		if i < 0 {
			return false
		}
		for _, c := range s[1:i] {
			if !strings.ContainsRune("0123456789abcdefABCDEF:.%", c) {
				return false
			}
		}
		host, port = "", s[i+1:]
		if port != "" && port[0] != ':' {
			return false
		}
		port = strings.TrimPrefix(port, ":")
	} else if i := strings.IndexByte(s, ':'); i >= 0 {
		host, port = s[:i], s[i+1:]
		if port == "" {
			return false
		}
	}
	if len(port) > 5 || !isDigits(port) {
		return false
	}
	if host == "" {
		return strings.HasPrefix(s, "[")
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" {
			return false
		}
		for i := 0; i < len(label); i++ {
			if !isTokenChar(label[i]) {
				return false
			}
		}
	}
	return true
}
