package cmd

import (
	"strings"
	"testing"
)

// execPace runs pace in process with args, stdin and Test streams, and
// returns its exit code, stdout and stderr.
func execPace(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ios, out, errOut := testIO(stdin)
	code = Execute(&Factory{IOStreams: ios}, args)
	return code, out.String(), errOut.String()
}

// TestFlagErrorsAreOneLine: a flag error is one line that says what is
// wrong, then where the usage is; never the whole usage, and nothing of
// Go's internals.
func TestFlagErrorsAreOneLine(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-r", "5s", "--", "true"},
			`invalid argument "5s" for "-r, --rate" flag: rule "5s": want a limit and a period separated by '/'; did you mean 5/s?`},
		{[]string{"run", "-r", "5 per second", "--", "true"},
			`invalid argument "5 per second" for "-r, --rate" flag: rule "5 per second": want a limit and a period separated by '/'; did you mean 5/s?`},
		{[]string{"run", "-r", "5/s,", "--", "true"},
			`invalid argument "5/s," for "-r, --rate" flag: the rule list ends with a comma; give several rules without spaces, as in 5/s,500/min, or repeat the flag`},
		{[]string{"run", "-j", "many", "--", "true"}, `invalid argument "many" for "-j, --jobs" flag: want a whole number, such as 4`},
		{[]string{"run", "-j", "-1", "--", "true"}, `invalid argument -1 for "-j, --jobs": want at least 1, or 0 for the number of CPUs`},
		{[]string{"run", "--timeout", "5", "--", "true"}, `invalid argument "5" for "--timeout" flag: want a duration with a unit, such as 5s or 5ms`},
		{[]string{"run", "--grace", "5/s", "--", "true"},
			`invalid argument "5/s" for "--grace" flag: want a duration such as 5s, 500ms or 1m30s (this flag takes a duration, not a rule)`},
		{[]string{"run", "--progress", "sometimes", "--", "true"}, `invalid argument "sometimes" for "--progress" flag: want one of auto, always, lines, never`},
		{[]string{"run", "--summary", "xml", "--", "true"}, `invalid argument "xml" for "--summary" flag: want one of text, json, none`},
		{[]string{"run", "--progress-interval", "500ms", "--", "true"}, `invalid argument 500ms for "--progress-interval": want at least 1s`},
		{[]string{"run", "--frobnicate", "--", "true"}, "unknown flag: --frobnicate"},
		{[]string{"run", "--resume", "--", "true"}, "--resume needs --joblog FILE"},
		{[]string{"fetch", "--max-body", "12q", "http://x/"}, `invalid argument "12q" for "--max-body" flag: want a size such as 1048576, 512k, 64M or 4G`},
		{[]string{"fetch", "--max-body", "0", "http://x/{}"}, `invalid argument for "--max-body": want more than 0, such as 64M`},
		{[]string{"fetch", "--max-server-pause", "0s", "http://x/{}"}, `invalid argument 0s for "--max-server-pause": want more than 0, such as 5m`},
		{[]string{"fetch", "--output-name", "{}", "http://x/{}"}, "--output-name needs -o DIR/"},
		{[]string{"fetch", "http://a/{}", "http://b/{}"}, "accepts at most 1 arg(s), received 2"},
		{[]string{"audit", "-r", "5/s", "-j", "-1"}, `invalid argument -1 for "-j, --jobs": want at least 0`},
		{[]string{"rnu"}, `unknown command "rnu" for "pace"; did you mean run?`},
		{[]string{"frobnicate", "x"}, `unknown command "frobnicate" for "pace"; to run a command per item: pace run -- frobnicate x`},
	} {
		code, stdout, stderr := execPace(t, "", tt.args...)
		cmd := "pace"
		if tt.args[0] == "run" || tt.args[0] == "fetch" || tt.args[0] == "audit" {
			cmd += " " + tt.args[0]
		}
		want := "pace: " + tt.want + "\nRun '" + cmd + " --help' for usage.\n"
		if code != ExitUsage || stderr != want || stdout != "" {
			t.Errorf("pace %q = exit %d, stdout %q, stderr\n%s\nwant exit 2 and\n%s", tt.args, code, stdout, stderr, want)
		}
		noInternals(t, strings.Join(tt.args, " "), stderr)
	}
}

// TestFlagHints: flags of xargs, GNU parallel and curl get a hint at
// pace's own.
func TestFlagHints(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-P", "4", "--", "true"}, "unknown shorthand flag: 'P' in -P; -P is xargs's and GNU parallel's; pace's is -j N (jobs at once)"},
		{[]string{"-P", "4", "--", "true"}, "unknown shorthand flag: 'P' in -P; -P is xargs's and GNU parallel's; pace's is -j N (jobs at once)"},
		{[]string{"run", "--max-procs", "4", "--", "true"}, "unknown flag: --max-procs; --max-procs is xargs's; pace's is -j N (jobs at once)"},
		{[]string{"run", "-I", "{}", "--", "true"}, "unknown shorthand flag: 'I' in -I; -I is xargs's; pace puts the item wherever {} stands in the command"},
		{[]string{"run", "-n", "1", "--", "true"}, "unknown shorthand flag: 'n' in -n; -n is xargs's; pace runs one item per job"},
		{[]string{"run", "--max-args=1", "--", "true"}, "unknown flag: --max-args; --max-args is xargs's; pace runs one item per job"},
		{[]string{"run", "-L", "1", "--", "true"}, "unknown shorthand flag: 'L' in -L; -L is xargs's; pace runs one item (line) per job"},
		{[]string{"run", "--arg-file", "x", "--", "true"}, "unknown flag: --arg-file; --arg-file is xargs's and GNU parallel's; pace's is -a FILE"},
		{[]string{"run", "--halt-on-error", "--", "true"}, "unknown flag: --halt-on-error; pace's flag is --halt now,fail=1"},
		{[]string{"run", "--retry", "2", "--", "true"}, "unknown flag: --retry; pace's flag is --retries N"},
		{[]string{"fetch", "-Z", "http://x/{}"}, "unknown shorthand flag: 'Z' in -Z; -Z is curl's; pace fetch's -j N sets the requests in flight"},
		{[]string{"fetch", "--limit-rate", "1k", "http://x/{}"}, "unknown flag: --limit-rate; --limit-rate is curl's bandwidth cap; pace's rate flag is -r N/PERIOD"},
		{[]string{"fetch", "--rate-limit", "5", "http://x/{}"}, "unknown flag: --rate-limit; pace's rate flag is -r N/PERIOD"},
		{[]string{"run", "--delay", "1", "--", "true"}, "unknown flag: --delay; pace spaces calls with rules: -r 1/2s for one call every two seconds"},
		// A flag without a hint is only unknown.
		{[]string{"run", "-Q", "--", "true"}, "unknown shorthand flag: 'Q' in -Q"},
	} {
		code, _, stderr := execPace(t, "", tt.args...)
		if first, _, _ := strings.Cut(stderr, "\n"); code != ExitUsage || first != "pace: "+tt.want {
			t.Errorf("pace %q = exit %d, stderr %q; want exit 2 and %q", tt.args, code, stderr, "pace: "+tt.want)
		}
	}
}

func TestRootShorthand(t *testing.T) {
	code, stdout, stderr := execPace(t, "a\nb\n", "-j", "1", "-k", "--summary", "none", "--", "echo", "got")
	if code != ExitOK || stdout != "got a\ngot b\n" || stderr != "" {
		t.Errorf("pace -j 1 -k -- echo got = exit %d, stdout %q, stderr %q; want pace run's output", code, stdout, stderr)
	}
}

func TestRootHelp(t *testing.T) {
	// No arguments, items from a terminal: help, not a wait for items.
	ios, out, errOut := testIO("")
	ios.SetStdinTTY(true)
	if code := Execute(&Factory{IOStreams: ios}, nil); code != ExitOK || !strings.Contains(out.String(), "Usage:\n  pace [flags] [-- <command> [<arg>...]]") || errOut.String() != "" {
		t.Errorf("pace on a terminal = exit %d, stdout %q, stderr %q; want the help", code, out, errOut)
	}
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"fetch", "--help"}, {"audit", "--help"}} {
		code, stdout, _ := execPace(t, "", args...)
		if code != ExitOK || !strings.Contains(stdout, "Usage:") || !strings.Contains(stdout, "Flags") {
			t.Errorf("pace %q = exit %d, stdout %q; want the help", args, code, stdout)
		}
	}
	if code, stdout, _ := execPace(t, "", "--help"); code != ExitOK || !strings.Contains(stdout, "Exit codes:\n  0    every job succeeded") {
		t.Errorf("pace --help = exit %d, want the exit codes in it:\n%s", code, stdout)
	}
}

func TestVersion(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "v1.2.3"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if code, stdout, _ := execPace(t, "", args...); code != ExitOK || stdout != "pace version v1.2.3\n" {
			t.Errorf("pace %q = exit %d, stdout %q; want the version", args, code, stdout)
		}
	}
	version = ""
	if v := fullVersion(); v == "" || strings.ContainsAny(v, " \n") {
		t.Errorf("fullVersion() without a stamp = %q, want dev, a module version or a revision", v)
	}
}
