package runner

import (
	"slices"
	"strings"
	"testing"
)

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
