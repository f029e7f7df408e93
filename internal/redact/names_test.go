package redact

import (
	"strings"
	"testing"
)

// secretParamNames are the parameter names whose values must be hidden,
// as the security issue lists them, with examples of each suffix.
var secretParamNames = []string{
	"key", "apikey", "api_key", "token", "auth", "password", "passwd", "pass", "secret",
	"sig", "signature", "credential", "credentials", "session", "sessionid",
	"X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token",
	"X-Goog-Signature", "X-Goog-Credential", "AWSAccessKeyId", "Signature", "Key-Pair-Id", "Policy",
	"jwt", "code", "access_token", "refresh_token", "id_token", "client_secret",
	"jsessionid", "PHPSESSID", "ASPSESSIONID",
	"oauth_consumer_key", "x-api-key", "private_token", "x-auth-token", "app_secret", "client-secret",
	"db_password", "db-password", "oauth_signature", "x-custom-signature",
	"REDISCLI_AUTH", "NPM_CONFIG__AUTH", "_auth", "basic-auth",
	"authorization", // ?authorization=Bearer... (APIs that take the header's value in the query)
	"bearer", "pw",  // ?bearer=..., ?pw=... (a password by its usual short name)
}

// publicParamNames must stay visible: without them, redacted URLs could
// not be told apart.
var publicParamNames = []string{
	"X-Amz-Algorithm", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders",
	"X-Goog-Algorithm", "X-Goog-Date", "X-Goog-Expires", "X-Goog-SignedHeaders",
	"Expires", "GoogleAccessId", "sv", "ss", "srt", "sp", "se", "st", "spr", "sr",
	"token_type", "expires_in", "state", "scope", "response-content-disposition",
	"page", "sort", "id", "monkey", "keys", "keyboard", "passport", "author", "sessions", "codes",
	"signatures", "policy_id", "tokens", "secretary", "oauth", "auth_type", "authority",
}

// caseVariants returns name as written, lower-case, upper-case and in
// alternating case.
func caseVariants(name string) []string {
	alt := []byte(strings.ToLower(name))
	for i := 0; i < len(alt); i += 2 {
		alt[i] = strings.ToUpper(string(alt[i]))[0]
	}
	return []string{name, strings.ToLower(name), strings.ToUpper(name), string(alt)}
}

// paramPositions are URLs with a parameter NAME=VALUE in the query, the
// fragment and a path segment.
var paramPositions = []string{
	"https://h.example/p?a=1&NAME=VALUE&b=2",
	"https://h.example/p?NAME=VALUE",
	"https://h.example/p?a=1#x=1&NAME=VALUE&token_type=bearer",
	"https://h.example/p#NAME=VALUE",
	"https://h.example/p/#/cb?NAME=VALUE&state=s",
	"https://h.example/app;NAME=VALUE/x?y=1",
	"https://h.example/app;v=1;NAME=VALUE;w=2",
}

func TestSecretParamNames(t *testing.T) {
	var r *Redactor
	for _, name := range secretParamNames {
		for _, n := range caseVariants(name) {
			for _, pos := range paramPositions {
				in := strings.NewReplacer("NAME", n, "VALUE", "v4lue-Zx9").Replace(pos)
				want := strings.NewReplacer("NAME", n, "VALUE", Placeholder).Replace(pos)
				if got := r.RawURL(in); got != want {
					t.Errorf("RawURL(%q) = %q, want %q", in, got, want)
				}
			}
		}
	}
}

func TestPublicParamNames(t *testing.T) {
	var r *Redactor
	for _, name := range publicParamNames {
		for _, n := range caseVariants(name) {
			for _, pos := range paramPositions {
				in := strings.NewReplacer("NAME", n, "VALUE", "v4lue-Zx9").Replace(pos)
				if got := r.RawURL(in); got != in {
					t.Errorf("RawURL(%q) = %q, want it unchanged", in, got)
				}
			}
		}
	}
}
