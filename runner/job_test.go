package runner

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// AnswerLag counts from the limiter's record as Lag does, and is known
// only when both the leaving and the answer are.
func TestResultAnswerLag(t *testing.T) {
	sent := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := Result{Sent: sent, Lag: 3 * time.Millisecond, Answered: sent.Add(20 * time.Millisecond)}
	if got, ok := r.AnswerLag(); !ok || got != 23*time.Millisecond {
		t.Errorf("AnswerLag() = %v, %v; want 23ms, true", got, ok)
	}
	for _, r := range []Result{{Sent: sent}, {Answered: sent}} {
		if got, ok := r.AnswerLag(); ok {
			t.Errorf("AnswerLag() of %+v = %v, true; want unknown", r, got)
		}
	}
}

// FuzzSplitCommandLine: SplitCommandLine reads back every line that
// Job.CommandLine writes.
func FuzzSplitCommandLine(f *testing.F) {
	f.Add("curl|-H|Authorization: Bearer x|it's|a\"b|$x|")
	f.Add("NAME=value|x")
	f.Add("|'\\''|\\")
	f.Add("a\nb|\x1b[2J|it's\t\\|\xff\u202e\u00e9|\x7f\x00")
	f.Fuzz(func(t *testing.T, args string) {
		argv := strings.Split(args, "|")
		line := (&Job{Argv: argv}).CommandLine()
		got, ok := SplitCommandLine(line)
		if !ok || !slices.Equal(got, argv) {
			t.Errorf("SplitCommandLine(%q) = %q, %v; want %q", line, got, ok, argv)
		}
	})
}

// Quote writes a word that holds a control character, a rune that is not
// printable or invalid UTF-8 in ANSI-C quotes, as bash's printf %q does:
// on one line, with nothing that drives a terminal, printable runes kept.
func TestQuoteANSI(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"a\nb", `$'a\nb'`},
		{"\x1b[2J", `$'\e[2J'`},
		{"tab\there", `$'tab\there'`},
		{"it's\r\\", `$'it\'s\r\\'`},
		{"\x00\x01\x7f\a\b\f\v", `$'\000\001\177\a\b\f\v'`},
		{"caf\u00e9\u202e!", "$'caf\u00e9\\342\\200\\256!'"},
		{"\xff\n", `$'\377\n'`},
		{"\u00e9 $x", "'\u00e9 $x'"}, // printable: quoted as before
		{"\ufffd", "'\ufffd'"},
	} {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// A job log of an earlier pace holds control characters raw in single
// quotes: its lines still split, into the same words.
func TestSplitCommandLineReadsRawControls(t *testing.T) {
	argv, ok := SplitCommandLine("test 'a\tb' '\x1b' = d")
	if want := []string{"test", "a\tb", "\x1b", "=", "d"}; !ok || !slices.Equal(argv, want) {
		t.Errorf("SplitCommandLine = %q, %v; want %q", argv, ok, want)
	}
}

func TestSplitCommandLineRefuses(t *testing.T) {
	for _, line := range []string{"", "a  b", "a ", " a", "'a", `a\`, `"a`,
		`$a`, `$'a`, `$'\q'`, `$'\40'`, `$'\400'`, `x 'a b'c'`, `'ab'`, `$'ab'`} {
		if argv, ok := SplitCommandLine(line); ok {
			t.Errorf("SplitCommandLine(%q) = %q, true; want false", line, argv)
		}
	}
}
