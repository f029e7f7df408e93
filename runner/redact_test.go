package runner

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestIsSecretHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "authorization": true, "Proxy-Authorization": true,
		"Cookie": true, "Set-Cookie": true, "X-Api-Key": true, "x-api-key": true,
		"X-Auth-Token": true, "Private-Token": true, "X-Client-Secret": true, "X-Db-Password": true,
		"Accept": false, "User-Agent": false, "Content-Type": false, "X-Key-Id": false, "Keyboard": false,
	} {
		if got := IsSecretHeader(name); got != want {
			t.Errorf("IsSecretHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://api.example.com/items/3", "https://api.example.com/items/3"},
		{"https://alice:s3cret@api.example.com/x", "https://REDACTED@api.example.com/x"},
		{"https://alice@api.example.com/x", "https://REDACTED@api.example.com/x"},
		{"https://h/x?page=2&api_key=abc123&sort=asc", "https://h/x?page=2&api_key=REDACTED&sort=asc"},
		{"https://h/x?access_token=t0k&Signature=zz&key=k", "https://h/x?access_token=REDACTED&Signature=REDACTED&key=REDACTED"},
		{"https://h/x?monkey=1&keys=2", "https://h/x?monkey=1&keys=2"},
		{"https://h/x?token", "https://h/x?token"}, // no value to hide
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := RedactURL(u); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := RedactRawURL(tt.in); got != tt.want {
			t.Errorf("RedactRawURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactRawURLUnparsable(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://bob:pa ss@host/x", "http://REDACTED@host/x"},
		{"http://bob:p%zz@host/x", "http://REDACTED@host/x"},
		{"bob:hunter2@host/x", "REDACTED@host/x"},
		{"http://[::1/x?token=abc", "http://[::1/x?token=REDACTED"},
		{"not a url", "not a url"},
	}
	for _, tt := range tests {
		if got := RedactRawURL(tt.in); got != tt.want {
			t.Errorf("RedactRawURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactText(t *testing.T) {
	in := `Get "https://bob:***@h.example/a?api_key=xyz": dial tcp: lookup h.example: no such host` +
		` (redirected from http://u:p@x/)`
	got := RedactText(in)
	for _, secret := range []string{"bob", "xyz", "u:p"} {
		if strings.Contains(got, secret) {
			t.Errorf("RedactText(...) = %q, still holds %q", got, secret)
		}
	}
	if !strings.Contains(got, "no such host") || !strings.Contains(got, "https://REDACTED@h.example/a?api_key=REDACTED") {
		t.Errorf("RedactText(...) = %q, lost the message", got)
	}
}

func TestRedactorHidesHeaderValuesAndEncodings(t *testing.T) {
	var r Redactor
	r.Add("Bearer abc.def+ghi/jkl")
	r.Add("ab") // too short to matter; must not garble text
	msg := "token abc.def+ghi/jkl, escaped abc.def%2Bghi%2Fjkl, path abc.def+ghi%2Fjkl, about"
	got := r.String(msg)
	if strings.Contains(got, "ghi") {
		t.Errorf("String(%q) = %q, still holds the token", msg, got)
	}
	if !strings.Contains(got, "about") {
		t.Errorf("String(%q) = %q, replaced a short value", msg, got)
	}
}

// TestRedactorError checks a real net/http error: the client embeds the
// URL (with the password starred but the user name and query kept).
func TestRedactorError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler) // the client sees EOF
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/x?access_token=tok12345")
	u.User = url.UserPassword("alice", "hunter22")
	_, err := srv.Client().Get(u.String())
	if err == nil {
		t.Fatal("Get succeeded, want an error")
	}
	var r Redactor
	r.AddURL(u)
	red := r.Error(err)
	for _, secret := range []string{"alice", "hunter22", "tok12345"} {
		if strings.Contains(red.Error(), secret) {
			t.Errorf("Error() = %q, holds %q", red.Error(), secret)
		}
	}
	var ue *url.Error
	if !errors.As(red, &ue) {
		t.Errorf("redacted error %v lost its *url.Error", red)
	}
	if r.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
}

// FuzzRedactRawURL: a password in a URL's userinfo never survives
// redaction, whether or not the URL parses, alone or inside a message.
func FuzzRedactRawURL(f *testing.F) {
	f.Add("http", "bob", "hunter22", "example.com/x?a=1")
	f.Add("https", "a b", "p@ss:w0rd", "[::1]:80/")
	f.Add("x", "", "secret", "%zz")
	f.Fuzz(func(t *testing.T, scheme, user, pass, rest string) {
		if len(pass) < 6 || strings.ContainsAny(pass, "/?#@ \t\r\n\"'<>`") || strings.Contains(Redacted, pass) ||
			strings.Contains(scheme+"://"+user, pass) || strings.Contains(rest, pass) || strings.ContainsAny(user, "/?#@") {
			return
		}
		raw := scheme + "://" + user + ":" + pass + "@" + rest
		if got := RedactRawURL(raw); strings.Contains(got, pass) {
			t.Errorf("RedactRawURL(%q) = %q, holds the password", raw, got)
		}
		if got := RedactText(`Get "` + raw + `": EOF`); strings.Contains(got, pass) && isSchemeWord(scheme) &&
			!hasURLStop(user+pass) { // text scanning ends a URL there
			t.Errorf("RedactText(%q) = %q, holds the password", raw, got)
		}
	})
}

// hasURLStop reports whether s holds a byte that ends a URL in free text.
func hasURLStop(s string) bool {
	for i := 0; i < len(s); i++ {
		if isURLStop(s[i]) {
			return true
		}
	}
	return false
}

// isSchemeWord reports whether s can be found as a scheme in free text.
func isSchemeWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isSchemeChar(s[i]) {
			return false
		}
	}
	return true
}
