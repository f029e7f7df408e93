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
	f.Fuzz(func(t *testing.T, args string) {
		argv := strings.Split(args, "|")
		line := (&Job{Argv: argv}).CommandLine()
		got, ok := SplitCommandLine(line)
		if !ok || !slices.Equal(got, argv) {
			t.Errorf("SplitCommandLine(%q) = %q, %v; want %q", line, got, ok, argv)
		}
	})
}

func TestSplitCommandLineRefuses(t *testing.T) {
	for _, line := range []string{"", "a  b", "a ", " a", "'a", `a\`, `"a`} {
		if argv, ok := SplitCommandLine(line); ok {
			t.Errorf("SplitCommandLine(%q) = %q, true; want false", line, argv)
		}
	}
}
