package cmd

import (
	"os"
	"strings"
	"syscall"
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
		{[]string{"fetch", "--cost-rate", "10/s", "--cost-from-response", "bogus", "http://x/{}"},
			`invalid argument "bogus" for "--cost-from-response" flag: cost source "bogus": want header:NAME (such as header:X-Tokens-Used) or json:PATH (such as json:usage.total_tokens)`},
		{[]string{"fetch", "--max-body", "12q", "http://x/"}, `invalid argument "12q" for "--max-body" flag: want a size such as 1048576, 512k, 64M or 4G`},
		{[]string{"fetch", "--max-body", "0", "http://x/{}"}, `invalid argument for "--max-body": want more than 0, such as 64M`},
		{[]string{"fetch", "--max-server-pause", "0s", "http://x/{}"}, `invalid argument 0s for "--max-server-pause": want more than 0, such as 5m`},
		{[]string{"fetch", "--output-name", "{}", "http://x/{}"}, "--output-name needs -o DIR/"},
		{[]string{"fetch", "http://a/{}", "http://b/{}"},
			`pace fetch takes one URL template, but got 2 arguments ("http://a/{}" "http://b/{}"): give the URLs as items, one per line on stdin or in -a FILE`},
		{[]string{"fetch", "http://x/{}", ":::", "1", "2"},
			`pace fetch reads its items from stdin or -a FILE, not after ::: (that is pace run's): printf '%s\n' 1 2 | pace fetch 'http://x/{}'`},
		{[]string{"fetch", "http://x/{}", "::::", "ids.txt"},
			`pace fetch reads its items from stdin or -a FILE, not after :::: (that is pace run's): pace fetch -a ids.txt 'http://x/{}'`},
		{[]string{"run", "-r", "5/s,,", "--", "true"},
			`invalid argument "5/s,," for "-r, --rate" flag: the rule list "5/s,," has an empty rule; want rules separated by single commas, such as 5/s,500/min`},
		{[]string{"run", "-r", ",5/s", "--", "true"},
			`invalid argument ",5/s" for "-r, --rate" flag: the rule list ",5/s" has an empty rule; want rules separated by single commas, such as 5/s,500/min`},
		{[]string{"fetch", "--cost-rate", "5/s,,10/min", "http://x/{}"},
			`invalid argument "5/s,,10/min" for "--cost-rate" flag: the rule list "5/s,,10/min" has an empty rule; want rules separated by single commas, such as 5/s,500/min`},
		// --colsep is a regular expression: a lone metacharacter gets a
		// hint at its literal, and a separator that splits everywhere or
		// nowhere is refused.
		{[]string{"run", "--colsep", "|", "--", "true"},
			`invalid argument "|" for "--colsep": it matches the empty string, so it would split everywhere; for a literal | give --colsep '\|'`},
		{[]string{"run", "--colsep", ".", "--", "true"},
			`invalid argument "." for "--colsep": it matches every character, so every column would be empty; for a literal . give --colsep '\.'`},
		{[]string{"run", "--colsep", "+", "--", "true"},
			`invalid argument "+" for "--colsep": want a regular expression such as '\t' or ',' (missing argument to repetition operator); for a literal + give --colsep '\+'`},
		{[]string{"run", "--colsep", "", "--", "true"}, `invalid argument "" for "--colsep": want a regular expression such as '\t' or ','`},
		// A cost that fails for every item is refused before anything runs.
		{[]string{"run", "--cost", "{len}/0", "--cost-rate", "100/s", "--", "true"},
			`invalid argument "{len}/0" for "--cost" flag: it fails for every item (division by zero): want a whole number or arithmetic such as 1200/4 or {len}/4`},
		{[]string{"fetch", "--cost", "{len}*", "--cost-rate", "100/s", "http://x/{}"},
			`invalid argument "{len}*" for "--cost" flag: it fails for every item (a number is missing): want a whole number or arithmetic such as 1200/4 or {len}/4`},
		{[]string{"run", "--cost", "{2}", "--cost-rate", "100/s", "--", "true"},
			`--cost "{2}" uses column {2}, but each item is one column: split the lines into columns with --colsep, such as --colsep '\t'`},
		{[]string{"fetch", "--cost", "{2}/4", "--cost-rate", "100/s", "http://x/{}"},
			`--cost "{2}/4" uses column {2}, but each item is one column: split the lines into columns with --colsep, such as --colsep '\t'`},
		{[]string{"run", "--cost", "{3}", "--cost-rate", "100/s", "--", "true", ":::", "a", ":::", "b"},
			`--cost "{3}" uses column {3}, but the items have 2 columns, one per ::: source`},
		{[]string{"run", "--", "echo", "{2}", ":::", "a", "b"}, `the command uses column {2}, but the items have 1 column, one per ::: source`},
		{[]string{"run", "-a", "-", "--", "echo", "{1}", "{2}"},
			`the command uses column {2}, but each item is one column: split the lines into columns with --colsep, such as --colsep '\t'`},
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

// TestAllowReorderShared: --allow-reorder reorders the in-memory
// limiter's queue only; with a shared quota it is refused, not ignored.
func TestAllowReorderShared(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	state := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--key", "api", "--state", state}, "--key"},
		{[]string{"--redis", "redis://127.0.0.1:1", "--redis-timeout", "1s"}, "--redis"},
	} {
		args := append([]string{"run", "--allow-reorder", "-r", "5/s"}, append(tt.args, "--", "true")...)
		code, _, stderr := execPace(t, "a\n", args...)
		want := "pace: --allow-reorder works with the in-memory limiter only: a shared quota (" + tt.want +
			") admits calls in the order they come; leave out one or the other\n"
		if first, _, _ := strings.Cut(stderr, "Run"); code != ExitUsage || first != want {
			t.Errorf("pace %q = exit %d, stderr %q; want exit 2 and %q", args, code, stderr, want)
		}
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("a refused run left %d files in --state", len(entries))
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
		// GNU parallel's --delay: the rule computed from the delay given.
		{[]string{"run", "--delay", "1", "--", "true"}, "unknown flag: --delay; --delay 1 is GNU parallel's; pace's is -r 1/s"},
		{[]string{"run", "--delay", "0.2", "--", "true"}, "unknown flag: --delay; --delay 0.2 is GNU parallel's; pace's is -r 5/s (or -r 1/200ms to space every start by 200ms)"},
		{[]string{"--delay=0.3", "--", "true"}, "unknown flag: --delay; --delay 0.3 is GNU parallel's; pace's is -r 1/300ms"},
		{[]string{"fetch", "--delay", "2m", "http://x/{}"}, "unknown flag: --delay; --delay 2m is GNU parallel's; pace's is -r 1/2m"},
		{[]string{"run", "--delay", "soon", "--", "true"}, "unknown flag: --delay; pace spaces calls with rules: -r 1/2s for one call every two seconds"},
		// GNU parallel's output and progress flags.
		{[]string{"run", "--bar", "--", "true"}, "unknown flag: --bar; --bar is GNU parallel's; pace draws a progress bar on stderr when it is a terminal (--progress always draws it anyway)"},
		{[]string{"run", "--eta", "--", "true"}, "unknown flag: --eta; --eta is GNU parallel's; pace's progress shows the ETA once the number of items is known (--progress always, or --progress lines for logs)"},
		{[]string{"run", "--line-buffer", "--", "true"}, "unknown flag: --line-buffer; --line-buffer is GNU parallel's; pace prints each job's output whole when the job ends, never mixed with another's (as parallel's default --group)"},
		// curl's habits in pace fetch.
		{[]string{"fetch", "-s", "http://x/{}"}, "unknown shorthand flag: 's' in -s; -s is curl's; pace fetch writes only bodies to stdout, and -q quiets stderr (no progress, a summary only if something failed)"},
		{[]string{"fetch", "-sS", "http://x/{}"}, "unknown shorthand flag: 's' in -sS; -s is curl's; pace fetch writes only bodies to stdout, and -q quiets stderr (no progress, a summary only if something failed)"},
		{[]string{"fetch", "-S", "http://x/{}"}, "unknown shorthand flag: 'S' in -S; -S is curl's; pace fetch always shows each failure on stderr"},
		{[]string{"fetch", "-f", "http://x/{}"}, "unknown shorthand flag: 'f' in -f; -f is curl's; pace fetch already fails an item on any status but 2xx, and then exits 1"},
		{[]string{"fetch", "--fail", "http://x/{}"}, "unknown flag: --fail; --fail is curl's; pace fetch already fails an item on any status but 2xx, and then exits 1"},
		{[]string{"fetch", "-w", "%{http_code}", "http://x/{}"}, "unknown shorthand flag: 'w' in -w; -w is curl's; pace fetch's --joblog FILE records each request's start, duration, size and HTTP status (Exitval, 0 for a 2xx)"},
		{[]string{"fetch", "-O", "http://x/{}"}, "unknown shorthand flag: 'O' in -O; -O is curl's; pace fetch's is -o DIR/ --output-name '{/}' (one file per item, named after its last path part)"},
		{[]string{"fetch", "-i", "http://x/{}"}, "unknown shorthand flag: 'i' in -i; -i is curl's; pace fetch writes bodies only, never headers"},
		{[]string{"fetch", "-L", "http://x/{}"}, "unknown shorthand flag: 'L' in -L; -L is curl's; pace fetch already follows redirects (at most 10)"},
		{[]string{"fetch", "--location", "http://x/{}"}, "unknown flag: --location; --location is curl's; pace fetch already follows redirects (at most 10)"},
		// In pace run, -L is still xargs's, and curl's flags are no hint.
		{[]string{"run", "-L", "1", "--", "true"}, "unknown shorthand flag: 'L' in -L; -L is xargs's; pace runs one item (line) per job"},
		{[]string{"run", "-O", "--", "true"}, "unknown shorthand flag: 'O' in -O"},
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

// TestPrintFails: help and the version that cannot be written (stdout
// on a full disk, or its reader gone) are a failure, never exit 0: cobra's
// help ignored the error (pace --help > /dev/full exited 0), and
// --version's was taken for a usage error (exit 2, "Run 'pace --help'"),
// and pace completion, whose commands cobra made with os.Stdout before
// pace set its writer, gave exit 1 and a message for a reader gone.
func TestPrintFails(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"help", "fetch"}, {"--version"}, {"version"},
		{"completion", "bash"}, {"completion", "zsh"}, {"completion", "fish"}} {
		for _, tt := range []struct {
			err    error
			code   int
			stderr string
		}{
			{syscall.ENOSPC, ExitFailed, "pace: cannot write to stdout: no space left on device\n"},
			{syscall.EPIPE, ExitBrokenPipe, ""}, // pace --help | head -1: as a program SIGPIPE kills
		} {
			ios, _, errOut := testIO("")
			ios.Out = failingWriter{tt.err}
			if code := Execute(&Factory{IOStreams: ios}, args); code != tt.code || errOut.String() != tt.stderr {
				t.Errorf("pace %q, stdout failing with %v = exit %d, stderr %q; want exit %d, stderr %q", args, tt.err, code, errOut, tt.code, tt.stderr)
			}
		}
	}
}
