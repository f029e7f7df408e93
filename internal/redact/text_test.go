package redact

import "testing"

func TestText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"no urls here, user:pass@host is not one", "no urls here, user:pass@host is not one"},
		{
			`Get "https://bob:***@h.example/a?api_key=xyz": dial tcp: lookup h.example: no such host (redirected from http://u:p@x/)`,
			`Get "https://bob:REDACTED@h.example/a?api_key=REDACTED": dial tcp: lookup h.example: no such host (redirected from http://u:REDACTED@x/)`,
		},
		{
			"fetch https://ghp_abc@github.com/x and redis://:pw@10.0.0.1:6379/0, then https://h/p?sig=s1&page=2.",
			"fetch https://REDACTED@github.com/x and redis://:REDACTED@10.0.0.1:6379/0, then https://h/p?sig=REDACTED&page=2.",
		},
		// A quoted URL runs to its closing quote, spaces and all.
		{`parse "http://bob:pa ss@host/x": invalid`, `parse "http://bob:REDACTED@host/x": invalid`},
		{`parse "http://h/x?token=a\"b c": bad`, `parse "http://h/x?token=REDACTED": bad`},
		// Unquoted, it ends at a space, a quote or a bracket.
		{"<https://h/?token=t>", "<https://h/?token=REDACTED>"},
		{"'https://u:p@h' `https://u:p@h`", "'https://u:REDACTED@h' `https://u:REDACTED@h`"},
		{"a\thttps://u:p@h\nb", "a\thttps://u:REDACTED@h\nb"},
		{`"https://u:p@h`, `"https://u:REDACTED@h`}, // no closing quote
		{"error.https://u:p@h", "error.https://u:REDACTED@h"},
		// Prose punctuation after an unquoted URL stays.
		{"fetch https://h/?api_key=k3y: EOF", "fetch https://h/?api_key=REDACTED: EOF"},
		{"(see https://h/?token=t0k), then https://u:p@h.", "(see https://h/?token=REDACTED), then https://u:REDACTED@h."},
		{"https://h/wiki/Go_(lang)?token=t0k)", "https://h/wiki/Go_(lang)?token=REDACTED"},
		{"https://h/?token=a:b:", "https://h/?token=REDACTED:"},
		{"://u:p@h", "://u:REDACTED@h"},
	}
	var r *Redactor
	for _, tt := range tests {
		if got := r.Text(tt.in); got != tt.want {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTextExtraParams(t *testing.T) {
	r := New("tenant")
	in := `Get "https://h/x?tenant=acme&page=1": EOF`
	want := `Get "https://h/x?tenant=REDACTED&page=1": EOF`
	if got := r.Text(in); got != want {
		t.Errorf("Text(%q) = %q, want %q", in, got, want)
	}
}
