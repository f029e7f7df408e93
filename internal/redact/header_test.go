package redact

import "testing"

func TestIsSecretHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "authorization": true, "AUTHORIZATION": true, "Proxy-Authorization": true,
		"Cookie": true, "cookie": true, "Set-Cookie": true, "X-Api-Key": true, "x-api-key": true,
		"X-Auth-Token": true, "Private-Token": true, "X-Client-Secret": true, "X-Db-Password": true,
		"x_api_key": true, "X_AUTH_TOKEN": true, "app_secret": true, "db_password": true, " Cookie ": true,
		// Names without a dash before the secret word (Supabase, Binance), and short ones.
		"apikey": true, "X-MBX-APIKEY": true, "X-Apikey": true, "Token": true, "X-CSRFToken": true,
		"Secret": true, "ClientSecret": true, "Auth": true, "X-Auth": true, "Basic_Auth": true,
		"Password": true, "X-Passwd": true,
		"Accept": false, "User-Agent": false, "Content-Type": false, "X-Key-Id": false, "Keyboard": false,
		"Location": false, "Referer": false, "X-Token-Type": false, "": false,
		"WWW-Authenticate": false, "Authentication-Info": false, "X-OAuth-Scopes": false, "Tokens": false,
	} {
		if got := IsSecretHeader(name); got != want {
			t.Errorf("IsSecretHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestHeader(t *testing.T) {
	r := New().With("Bearer abc123xyz")
	tests := []struct{ name, value, want string }{
		{"Authorization", "Bearer abc123xyz", Placeholder},
		{"x-api-key", "k3y", Placeholder},
		{"Cookie", "", ""},
		{"Accept", "application/json", "application/json"},
		{"Location", "https://u:pw@h/next?token=t", "https://u:REDACTED@h/next?token=REDACTED"},
		{"X-Echo", "got abc123xyz", "got REDACTED"},
	}
	for _, tt := range tests {
		if got := r.Header(tt.name, tt.value); got != tt.want {
			t.Errorf("Header(%q, %q) = %q, want %q", tt.name, tt.value, got, tt.want)
		}
	}
	var nilR *Redactor
	if got := nilR.Header("Authorization", "Basic dXNlcjpwYXNz"); got != Placeholder {
		t.Errorf("nil Header(%q, %q) = %q, want %q", "Authorization", "Basic dXNlcjpwYXNz", got, Placeholder)
	}
}
