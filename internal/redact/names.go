package redact

import "strings"

// isSecretName reports whether a query, fragment or path parameter called
// name (decoded, lower-case) carries a credential: one of the built-in
// names, or one given to New.
func (r *Redactor) isSecretName(name string) bool {
	if isBuiltinSecretParam(name) {
		return true
	}
	if r == nil {
		return false
	}
	_, ok := r.extra[name]
	return ok
}

// isBuiltinSecretParam reports whether name (lower-case) is a built-in
// secret parameter name. Besides API keys, tokens and passwords, it covers
// the signing schemes of pre-signed URLs (AWS SigV4 and SigV2, Google
// Cloud Storage V4, CloudFront, Azure SAS), OAuth 2 responses and Java,
// PHP and ASP session ids. The other parameters of a pre-signed URL
// (X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders, Expires, Azure's se, sp,
// sv, ...) stay visible, so that redacted URLs can still be told apart.
func isBuiltinSecretParam(name string) bool {
	switch name {
	case "key", "apikey", "api_key", "token", "auth", "authorization", "bearer", "password", "passwd", "pass", "pw",
		"secret", "sig", "signature", "credential", "credentials", "session", "sessionid",
		// pre-signed URLs
		"x-amz-signature", "x-amz-credential", "x-amz-security-token",
		"x-goog-signature", "x-goog-credential",
		"awsaccesskeyid", "key-pair-id", "policy",
		// OAuth 2 and OpenID Connect
		"jwt", "code", "access_token", "refresh_token", "id_token", "client_secret":
		return true
	}
	if strings.Contains(name, "password") || strings.Contains(name, "passwd") {
		return true // env PGPASSWORD=..., ADMINPASSWORD
	}
	for _, suf := range [...]string{
		"_key", "-key", "_token", "-token", "_secret", "-secret",
		"_password", "-password", "_signature", "-signature",
		"_pwd",           // MYSQL_PWD
		"_auth", "-auth", // REDISCLI_AUTH, npm's _auth, --basic-auth
		"sessionid", "sessid", // jsessionid, aspsessionid, phpsessid
	} {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}
