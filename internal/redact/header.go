package redact

import "strings"

// IsSecretHeader reports whether the value of the HTTP header called name
// is a credential: Authorization, Proxy-Authorization, Cookie, Set-Cookie,
// Auth, any name ending in -Key, _key, apikey, token, secret, -Auth or
// _auth, and any name holding password or passwd (X-Api-Key,
// X-Auth-Token, Private-Token, Supabase's apikey, Binance's X-MBX-APIKEY,
// Token, X-Auth, X-Password), whatever the case.
func IsSecretHeader(name string) bool {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "authorization", "proxy-authorization", "cookie", "set-cookie", "auth":
		return true
	}
	if strings.Contains(n, "password") || strings.Contains(n, "passwd") {
		return true
	}
	for _, suf := range [...]string{"-key", "_key", "apikey", "token", "secret", "-auth", "_auth"} {
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
