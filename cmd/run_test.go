package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/internal/tmpl"
	"github.com/pace-cli/pace/throttle"
)

// parseFlags runs the flag parsing of the command newCmd makes on args,
// and returns the options its run function receives.
func parseFlags[O any](t *testing.T, newCmd func(*Factory, func(*O) error) *cobra.Command, args ...string) (*O, error) {
	t.Helper()
	ios, _, _, _ := Test()
	var got *O
	cmd := newCmd(&Factory{IOStreams: ios}, func(o *O) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.ErrOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &FlagError{err: err} })
	if err := cmd.Execute(); err != nil {
		return nil, err
	}
	return got, nil
}

// parseRun returns the options pace run's flags make of args.
func parseRun(t *testing.T, args ...string) (*RunOptions, error) {
	t.Helper()
	return parseFlags(t, NewCmdRun, args...)
}

func TestRunFlagsToOptions(t *testing.T) {
	o, err := parseRun(t, "-r", "10/s", "-r", "500/min,12/3s", "-j", "4", "-a", "in.txt", "-0",
		"--margin", "50ms", "--timeout", "2s", "--retries", "3", "-k", "--tag", "--dry-run", "-v",
		"--progress", "lines", "--progress-interval", "30s", "--summary", "json", "--summary-file", "sum.json",
		"--grace", "1s", "--joblog", "jobs.log", "--resume-failed", "--shell", "--colsep", ",",
		"--", "echo", "-n", "{}")
	if err != nil {
		t.Fatal(err)
	}
	c := o.Common
	wantRules := []throttle.Rule{{N: 10, Window: time.Second}, {N: 500, Window: time.Minute}, {N: 12, Window: 3 * time.Second}}
	if !slices.Equal(c.Rules, wantRules) {
		t.Errorf("Rules = %v, want %v", c.Rules, wantRules)
	}
	want := CommonOptions{Rules: c.Rules, Jobs: 4, Input: "in.txt", Null: true, ColSep: ",", Margin: 50 * time.Millisecond, MarginSet: true,
		Timeout: 2 * time.Second, Retries: 3, KeepOrder: true, Tag: true, DryRun: true, Verbose: true,
		Progress: progressLines, ProgressInterval: 30 * time.Second, Summary: summaryJSON, SummaryFile: "sum.json",
		Grace: time.Second, JobLogOptions: JobLogOptions{JobLog: "jobs.log", ResumeFailed: true}}
	if optionsString(c) != optionsString(want) {
		t.Errorf("options =\n%s\nwant\n%s", optionsString(c), optionsString(want))
	}
	if !o.Shell || o.Common.ColSep != "," || !slices.Equal(o.Command, []string{"echo", "-n", "{}"}) || o.Sources != nil {
		t.Errorf("shell %v, colsep %q, command %q, sources %v; want true, \",\", [echo -n {}], none", o.Shell, o.Common.ColSep, o.Command, o.Sources)
	}
}

// optionsString shows options, less the Redis ones, for comparing them.
func optionsString(o CommonOptions) string {
	o.Redis = RedisOptions{}
	b, _ := json.Marshal(o)
	return string(b)
}

func TestRunDefaults(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	o, err := parseRun(t)
	if err != nil {
		t.Fatal(err)
	}
	want := CommonOptions{Input: "-", Margin: defaultRunMargin, Progress: progressAuto, ProgressInterval: 10 * time.Second,
		Summary: summaryText, Grace: 10 * time.Second}
	if optionsString(o.Common) != optionsString(want) || len(o.Command) != 0 || o.Shell || o.Common.ColSep != "" {
		t.Errorf("defaults =\n%s\nwant\n%s", optionsString(o.Common), optionsString(want))
	}
	if err := o.Common.check(); err != nil || o.Common.Jobs != runtime.NumCPU() {
		t.Errorf("check() = %v, Jobs = %d; want nil, %d (the number of CPUs)", err, o.Common.Jobs, runtime.NumCPU())
	}
}

func TestRunCommandArgs(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		command []string
		jobs    int
		err     string
	}{
		// Without --, flags after the command belong to it, as with xargs.
		{args: []string{"-j", "2", "grep", "-v", "-r", "x"}, command: []string{"grep", "-v", "-r", "x"}, jobs: 2},
		{args: []string{"curl", "--timeout", "5", "-j", "3"}, command: []string{"curl", "--timeout", "5", "-j", "3"}},
		// ... unless they are most likely meant for pace.
		{args: []string{"echo", "{}", "-r", "5/s"},
			err: `"-r 5/s" after the command goes to the command, not to pace; put pace's flags before the command, or write -- before the command if -r is meant for it`},
		{args: []string{"echo", "{}", "-r5/s,10/m"}, err: `"-r5/s,10/m" after the command goes to the command`},
		{args: []string{"echo", "{}", "--jobs", "3"}, err: `"--jobs" after the command goes to the command`},
		{args: []string{"echo", "{}", "--rate=5/s"}, err: `"--rate=5/s" after the command goes to the command`},
		{args: []string{"echo", "--dry-run"}, err: `"--dry-run" after the command goes to the command`},
		// -- says they are the command's.
		{args: []string{"--", "echo", "{}", "-r", "5/s"}, command: []string{"echo", "{}", "-r", "5/s"}},
		{args: []string{"--", "echo", "--jobs", "3"}, command: []string{"echo", "--jobs", "3"}},
		// The program itself is never taken for a flag.
		{args: []string{"--", "--rate"}, command: []string{"--rate"}},
	} {
		o, err := parseRun(t, tt.args...)
		var fe *FlagError
		switch {
		case tt.err != "" && (!errors.As(err, &fe) || !strings.HasPrefix(err.Error(), tt.err)):
			t.Errorf("pace run %q = %v, want a FlagError %q", tt.args, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("pace run %q = %v", tt.args, err)
		case tt.err == "" && (!slices.Equal(o.Command, tt.command) || o.Common.Jobs != tt.jobs || o.Common.Rules != nil):
			t.Errorf("pace run %q: command %q, jobs %d, rules %v; want %q, %d, none", tt.args, o.Command, o.Common.Jobs, o.Common.Rules, tt.command, tt.jobs)
		}
	}
}

func TestPrefixWriter(t *testing.T) {
	var b strings.Builder
	w := &prefixWriter{w: &b, prefix: "it\t"}
	w.Write([]byte("a\nb"))
	w.Write([]byte("c\n\nd"))
	if got, want := b.String(), "it\ta\nit\tbc\nit\t\nit\td"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if n, err := (&prefixWriter{w: failingWriter{errors.New("full")}, prefix: "x"}).Write([]byte("a\n")); n != 0 || err == nil {
		t.Errorf("Write to a failing writer = %d, %v; want 0 and the error", n, err)
	}
}

func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "notexec.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args   []string
		shell  bool
		dryRun bool
		want   string
	}{
		{args: []string{"echo", "{}"}},
		{args: []string{"{}"}}, // the program comes from the item
		{args: []string{"echo {} | wc"}, shell: true},
		{args: []string{"no-such-program-pace", "{}"}, dryRun: true},
		{args: []string{"echo {} | wc"},
			want: `command "echo {} | wc" is one word that holds spaces: give its words separately (pace run -- echo {} | wc), or to run it as a shell command line, add --shell`},
		{args: []string{"echo {}"}, want: `command "echo {}" is one word that holds spaces`},
		{args: []string{"no-such-program-pace", "{}"}, want: `command "no-such-program-pace" not found`},
		{args: []string{"no|such", "{}"}, want: `command "no|such" not found; to run it as a shell command line, add --shell`},
		{args: []string{notExec, "{}"},
			want: `command "` + notExec + `" is not executable: chmod +x it, or run it with its interpreter (pace run -- sh ` + notExec + ` ...)`},
	} {
		c, err := tmpl.ParseCommand(tt.args, tt.shell)
		if err != nil {
			t.Fatalf("ParseCommand(%q) = %v", tt.args, err)
		}
		err = checkCommand(c, tt.args, tt.shell, tt.dryRun)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("checkCommand(%q, shell %v, dry run %v) = %v, want nil", tt.args, tt.shell, tt.dryRun, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("checkCommand(%q) = %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestIsCommentOrBlank(t *testing.T) {
	for line, want := range map[string]bool{"": true, "  \t": true, "# a comment": true, "  # indented": true, "echo # not": false, "x": false} {
		if got := isCommentOrBlank(line); got != want {
			t.Errorf("isCommentOrBlank(%q) = %v, want %v", line, got, want)
		}
	}
}

// TestRunCommands runs real commands: output in input order, failures
// named, the JSON summary counting them.
func TestRunCommands(t *testing.T) {
	ios, out, errOut := testIO("1\n2\n3\n")
	f := &Factory{IOStreams: ios}
	opts := &RunOptions{IO: ios, Factory: f, Command: []string{"sh", "-c", "echo out {}; exit $(( {#} % 2 ))"},
		Common: CommonOptions{Jobs: 2, KeepOrder: true, Input: "-", Rules: []throttle.Rule{{N: 100, Window: time.Second}},
			Progress: progressNever, ProgressInterval: time.Second, Summary: summaryJSON, Grace: time.Second}}
	if code := exitCode(runRun(context.Background(), opts)); code != ExitFailed {
		t.Errorf("runRun = exit %d, want %d\n%s", code, ExitFailed, errOut)
	}
	if got, want := out.String(), "out 1\nout 2\nout 3\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	stderr := errOut.String()
	for _, want := range []string{
		"pace: job 1 failed (exit status 1): sh -c 'echo out '\\''1'\\''; exit $(( 1 % 2 ))'\n",
		"pace: job 3 failed (exit status 1): sh -c 'echo out '\\''3'\\''; exit $(( 3 % 2 ))'\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	var sum struct{ OK, Failed, Attempts, ExitCode int }
	if err := json.Unmarshal([]byte(lastLine(stderr)), &sum); err != nil || sum.OK != 1 || sum.Failed != 2 || sum.Attempts != 3 {
		t.Errorf("summary %s (%v), want 1 ok, 2 failed, 3 attempts", lastLine(stderr), err)
	}
}

func TestRunRefusesBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--", "no-such-program-pace", ran}, `pace: command "no-such-program-pace" not found`},
		{[]string{"run", "--", "touch " + ran}, `pace: command "touch ` + ran + `" is one word that holds spaces`},
		{[]string{"run", "-a", filepath.Join(dir, "missing"), "--", "touch", ran}, "pace: open input: open " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{[]string{"run", "-a", "one", "-a", "two", "--", "touch", ran}, `pace: invalid argument "two" for "-a, --input" flag: "one" came first: pace reads one -a`},
		{[]string{"run", "--colsep", "(", "--", "touch", ran}, `pace: invalid argument "(" for "--colsep": want a regular expression such as '\t' or ',' (missing closing ))`},
	} {
		code, stdout, stderr := execPace(t, "x\n", tt.args...)
		if code != ExitUsage || stdout != "" || !strings.HasPrefix(stderr, tt.want) {
			t.Errorf("pace %q = exit %d, stdout %q, stderr %q; want exit 2 and %q", tt.args, code, stdout, stderr, tt.want)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("a job ran")
	}
}

func TestRunDryRun(t *testing.T) {
	code, stdout, stderr := execPace(t, "a b\nc\n", "run", "--dry-run", "-j", "2", "--", "no-such-program-pace", "{}", "slot{%}")
	if code != ExitOK || stdout != "no-such-program-pace 'a b' slot1\nno-such-program-pace c slot2\n" || stderr != "" {
		t.Errorf("pace run --dry-run = exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// Each line a command: comments and blank lines are skipped.
	code, stdout, _ = execPace(t, "# setup\necho hi\n\necho a | wc -c\n", "run", "--dry-run")
	if code != ExitOK || stdout != "echo hi\nsh -c 'echo a | wc -c'\n" {
		t.Errorf("pace run --dry-run of command lines = exit %d, stdout %q", code, stdout)
	}
}
