package runner

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	tests := []struct {
		in    string
		lines bool
		want  string
	}{
		{"404 Not Found", false, "404 Not Found"},
		{"404 \x1b]0;pwned\x07\x1b[2J Gone", false, `404 \x1b]0;pwned\a\x1b[2J Gone`},
		{"404 a\tb\r\nc\x00", false, `404 a\tb\r\nc\x00`},
		{"404 Não encontrado ✓", false, "404 Não encontrado ✓"},
		{"404 \u202egnp.exe \u0085 \x7f \xff\xfe", false, `404 \u202egnp.exe \u0085 \x7f \xff\xfe`},
		{`404 a\x1b`, false, `404 a\x1b`}, // text, not a control
		{"line 1\r\nline\t2\n\x1b[31mred\rover\n", true, "line 1\nline\t2\n\\x1b[31mred\\rover\n"},
		{"", true, ""},
	}
	for _, tt := range tests {
		if got := Printable(tt.in, tt.lines); got != tt.want {
			t.Errorf("Printable(%q, %v) = %q, want %q", tt.in, tt.lines, got, tt.want)
		}
	}
}

// FuzzPrintable checks that printable's result holds no control
// character or invalid UTF-8, and that printable text comes back as it is.
func FuzzPrintable(f *testing.F) {
	f.Add("404 \x1b]0;x\x07 Gone", true)
	f.Add("a\r\n\r\r\n\xc3", false)
	f.Add("Não ✓ \u202e \u2028", true)
	f.Fuzz(func(t *testing.T, s string, lines bool) {
		got := Printable(s, lines)
		if !utf8.ValidString(got) {
			t.Errorf("Printable(%q, %v) = %q, not UTF-8", s, lines, got)
		}
		for _, r := range got {
			if r == '\n' || r == '\t' {
				if !lines {
					t.Errorf("Printable(%q, false) = %q, holds %q", s, got, r)
				}
				continue
			}
			if unicode.IsControl(r) || !unicode.IsPrint(r) && r != ' ' {
				t.Errorf("Printable(%q, %v) = %q, holds %U", s, lines, got, r)
			}
		}
		if !strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || r != ' ' && !unicode.IsPrint(r) }) && got != s {
			t.Errorf("Printable(%q, %v) = %q, want it unchanged", s, lines, got)
		}
	})
}
