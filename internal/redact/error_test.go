package redact

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestError(t *testing.T) {
	r := New().With("k3y-value")
	plain := errors.New("nothing to hide")
	if got := r.Error(plain); got != plain {
		t.Errorf("Error(%v) = %v, want the same error", plain, got)
	}
	err := fmt.Errorf("open %s with k3y-value: %w", "https://u:pw@h/?token=t", fs.ErrNotExist)
	red := r.Error(err)
	if got, want := red.Error(), "open https://u:REDACTED@h/?token=REDACTED with REDACTED: file does not exist"; got != want {
		t.Errorf("Error(%q).Error() = %q, want %q", err, got, want)
	}
	if !errors.Is(red, fs.ErrNotExist) {
		t.Errorf("errors.Is(Error(%q), fs.ErrNotExist) = false, want true", err)
	}
	if errors.Unwrap(red) != err {
		t.Errorf("errors.Unwrap(Error(%q)) is not the original error", err)
	}
}

// TestErrorNetHTTP checks a real net/http error: the client embeds the
// URL, with the password starred but the user name and query kept.
func TestErrorNetHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		panic(http.ErrAbortHandler) // the client sees EOF
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL + "/x;jsessionid=s355ion?access_token=tok12345&page=2")
	u.User = url.UserPassword("alice", "hunter22")
	_, err := srv.Client().Get(u.String())
	if err == nil {
		t.Fatal("Get succeeded, want an error")
	}
	r := New().With("Bearer b34rer-t0ken")
	r.AddURL(u)
	msg := r.Error(err).Error()
	for _, secret := range []string{"hunter22", "tok12345", "s355ion"} {
		if strings.Contains(msg, secret) {
			t.Errorf("Error(...).Error() = %q, holds %q", msg, secret)
		}
	}
	for _, kept := range []string{"alice:REDACTED@", "page=2", "EOF"} {
		if !strings.Contains(msg, kept) {
			t.Errorf("Error(...).Error() = %q, lost %q", msg, kept)
		}
	}
	var ue *url.Error
	if !errors.As(r.Error(err), &ue) {
		t.Errorf("Error(%T) lost its *url.Error", err)
	}
}
