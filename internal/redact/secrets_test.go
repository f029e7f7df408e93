package redact

import (
	"net/url"
	"strings"
	"sync"
	"testing"
)

func TestStringKnownSecrets(t *testing.T) {
	r := New()
	r.Add("Bearer abc.def+ghi/jkl")
	r.Add("ab") // too short to matter; must not garble text
	r.Add("k3y with \"quote\"")
	tests := []struct{ in, want string }{
		{"token abc.def+ghi/jkl, about", "token REDACTED, about"},
		{"query-escaped abc.def%2Bghi%2Fjkl", "query-escaped REDACTED"},
		{"path-escaped abc.def+ghi%2Fjkl", "path-escaped REDACTED"},
		{"header Bearer abc.def+ghi/jkl", "header REDACTED"},
		{`quoted "k3y with \"quote\""`, `quoted "REDACTED"`},
		{"no secret, about", "no secret, about"},
		{"https://h/x?q=abc.def%2Bghi%2Fjkl&token=t", "https://h/x?q=REDACTED&token=REDACTED"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestStringOverlaps checks secrets that overlap one another or a
// placeholder: no piece of a secret is left, and a secret that overlaps a
// placeholder is left alone.
func TestStringOverlaps(t *testing.T) {
	tests := []struct {
		secrets []string
		in      string
		want    string
	}{
		{[]string{"abc123", "123xyz"}, "abc123xyz!", "REDACTED!"},
		{[]string{"abc", "abc123"}, "abc123 abc", "REDACTED REDACTED"},
		{[]string{"aaa"}, "aaaaa", "REDACTED"},
		{[]string{"ACT"}, "REDACTED ACT", "REDACTED REDACTED"},
		{[]string{"REDACTED"}, "REDACTED", "REDACTED"},
		{[]string{"xRE"}, "xREDACTED", "xREDACTED"},
		{[]string{"xRE", "abc"}, "xRE xabc", "REDACTED xREDACTED"},
		{[]string{"TED@h"}, "https://u:pw@h/xy", "https://u:REDACTED@h/xy"},
		// Hiding a secret joins a URL that Text saw in two pieces.
		{[]string{" zz"}, "http://h/ zz?token=abc", "http://h/REDACTED?token=REDACTED"},
	}
	for _, tt := range tests {
		r := New().With(tt.secrets...)
		got := r.String(tt.in)
		if got != tt.want {
			t.Errorf("With(%q).String(%q) = %q, want %q", tt.secrets, tt.in, got, tt.want)
		}
		if again := r.String(got); again != got {
			t.Errorf("With(%q).String(%q) = %q, not idempotent", tt.secrets, got, again)
		}
	}
}

// TestStringLong checks that secrets which overlap the placeholder do not
// make String slow on long text.
func TestStringLong(t *testing.T) {
	r := New().With("abc", "xRE", "aaa")
	s := strings.Repeat("x", 1<<16) + "abc" + strings.Repeat("a", 1<<16)
	want := strings.Repeat("x", 1<<16) + Placeholder + Placeholder // abc, then the a's
	if got := r.String(s); got != want {
		t.Errorf("String(%d bytes) = %d bytes, want %d", len(s), len(got), len(want))
	}
}

func TestAddURL(t *testing.T) {
	u, err := url.Parse("https://alice:hunter%2022@h/x;jsessionid=S355ION?access_token=t%2Bk1&page=2#id_token=idt0k")
	if err != nil {
		t.Fatal(err)
	}
	r := New()
	r.AddURL(u)
	r.AddURL(nil)
	in := "alice typed hunter 22 (hunter%2022, hunter+22), t+k1 t%2Bk1 S355ION idt0k page 2"
	want := "alice typed REDACTED (REDACTED, REDACTED), REDACTED REDACTED REDACTED REDACTED page 2"
	if got := r.String(in); got != want {
		t.Errorf("String(%q) = %q, want %q", in, got, want)
	}
	// A user name alone, or with an empty password, is the credential.
	for _, s := range []string{"https://ghp_t0ken@github.com/o/r", "https://ghp_t0ken:@github.com/o/r"} {
		u, _ = url.Parse(s)
		r = New()
		r.AddURL(u)
		if got, want := r.String("auth ghp_t0ken failed"), "auth REDACTED failed"; got != want {
			t.Errorf("after AddURL(%q), String(%q) = %q, want %q", s, "auth ghp_t0ken failed", got, want)
		}
	}
	// Extra names count.
	u, _ = url.Parse("https://h/?tenant=acme-corp")
	r = New("tenant")
	r.AddURL(u)
	if got, want := r.String("for acme-corp"), "for REDACTED"; got != want {
		t.Errorf("String(%q) = %q, want %q", "for acme-corp", got, want)
	}
}

func TestNilAndZero(t *testing.T) {
	var zero Redactor
	for _, r := range []*Redactor{nil, &zero, New()} {
		if got, want := r.String("https://u:pw@h/?token=t x"), "https://u:REDACTED@h/?token=REDACTED x"; got != want {
			t.Errorf("%#v.String = %q, want %q", r, got, want)
		}
		if got, want := r.RawURL("https://h/?tenant=t"), "https://h/?tenant=t"; got != want {
			t.Errorf("%#v.RawURL = %q, want %q", r, got, want)
		}
		if r.Error(nil) != nil {
			t.Errorf("%#v.Error(nil) != nil", r)
		}
	}
	var r *Redactor
	c := r.With("s3cret")
	if got, want := c.String("a s3cret"), "a REDACTED"; got != want {
		t.Errorf("nil.With(%q).String(%q) = %q, want %q", "s3cret", "a s3cret", got, want)
	}
	zero.Add("s3cret")
	if got, want := zero.String("a s3cret"), "a REDACTED"; got != want {
		t.Errorf("zero.String(%q) = %q, want %q", "a s3cret", got, want)
	}
}

// TestWithKeepsApart checks that secrets added to a derived Redactor, or
// to a copy of one, do not reach its source or its siblings.
func TestWithKeepsApart(t *testing.T) {
	base := New("tenant")
	base.Add("base-secret")
	a, b := base.With("secret-a"), base.With()
	b.Add("secret-b")
	byValue := *a
	byValue.Add("secret-c")
	a.Add("secret-d")
	msg := "base-secret secret-a secret-b secret-c secret-d"
	tests := []struct {
		name string
		r    *Redactor
		want string
	}{
		{"base", base, "REDACTED secret-a secret-b secret-c secret-d"},
		{"a", a, "REDACTED REDACTED secret-b secret-c REDACTED"},
		{"b", b, "REDACTED secret-a REDACTED secret-c secret-d"},
		{"copy of a", &byValue, "REDACTED REDACTED secret-b REDACTED secret-d"},
	}
	for _, tt := range tests {
		if got := tt.r.String(msg); got != tt.want {
			t.Errorf("%s.String(%q) = %q, want %q", tt.name, msg, got, tt.want)
		}
	}
	if got, want := b.RawURL("https://h/?tenant=t"), "https://h/?tenant=REDACTED"; got != want {
		t.Errorf("b.RawURL = %q, want %q", got, want)
	}
}

// TestConcurrentUse runs the way a fetch executor does: one shared
// Redactor, one derived per request. Run with -race.
func TestConcurrentUse(t *testing.T) {
	base := New("tenant")
	base.Add("shared-secret")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			secret := "request-" + strings.Repeat("x", i+3)
			r := base.With("Bearer " + secret)
			u, _ := url.Parse("https://u:pw" + secret + "@h/?tenant=t")
			r.AddURL(u)
			msg := "shared-secret " + secret + " " + u.String()
			got := r.String(msg)
			if strings.Contains(got, secret) || strings.Contains(got, "shared-secret") {
				t.Errorf("String(%q) = %q, holds a secret", msg, got)
			}
			_ = base.RawURL(u.String())
		})
	}
	wg.Wait()
	if got, want := base.String("request-xxx"), "request-xxx"; got != want {
		t.Errorf("base.String(%q) = %q, want %q: a request's secret reached the shared Redactor", "request-xxx", got, want)
	}
}
