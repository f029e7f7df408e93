package redact

import "strings"

// IsSecretHeader reports whether the value of the HTTP header called name
// is a credential: Authorization, Proxy-Authorization, Cookie, Set-Cookie,
// and any name ending in -Key, -Token, -Secret, -Password, _key, _token,
// _secret or _password (X-Api-Key, X-Auth-Token, Private-Token, ...),
// whatever the case.
func IsSecretHeader(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	for _, suf := range [...]string{"-key", "-token", "-secret", "-password", "_key", "_token", "_secret", "_password"} {
		if strings.HasSuffix(n, suf) {
			return true
		}
	}
	return false
}

// Header returns value as it may be shown for the HTTP header called name:
// Placeholder when IsSecretHeader(name) and value is not empty, otherwise
// value as String redacts it (a Location or Referer holds URLs).
func (r *Redactor) Header(name, value string) string {
	if IsSecretHeader(name) {
		if value == "" {
			return ""
		}
		return Placeholder
	}
	return r.String(value)
}
