//go:build unix

package cmd

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/throttle"
)

// Tests of pace exec: flags to options, then the command run in process
// with Test IO and real children (sh, cat). exec_*.txtar run it as a
// process of its own.

func parseExec(t *testing.T, args ...string) (*ExecOptions, error) {
	t.Helper()
	return parseFlags(t, NewCmdExec, args...)
}

func TestExecFlagsToOptions(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	o, err := parseExec(t, "-r", "5000/h", "-r", "10/s", "--cost-rate", "100/s", "--cost", "7", "--margin", "20ms",
		"--key", "gh", "--state", "/tmp/st", "--global-jobs", "2", "-v", "--", "gh", "api", "-X", "--key")
	if err != nil {
		t.Fatal(err)
	}
	wantRules := []throttle.Rule{{N: 5000, Window: time.Hour}, {N: 10, Window: time.Second}}
	if !slices.Equal(o.Rules, wantRules) || !slices.Equal(o.CostRules, []throttle.Rule{{N: 100, Window: time.Second, Cost: true}}) ||
		o.Cost != 7 || o.Margin != 20*time.Millisecond || !o.Verbose || o.WaitOnly {
		t.Errorf("options = %+v", o)
	}
	if o.Shared.Key != "gh" || o.Shared.State != "/tmp/st" || o.Shared.GlobalJobs != 2 || !o.Shared.Local() {
		t.Errorf("Shared = %+v, want the local quota gh in /tmp/st with 2 slots", o.Shared)
	}
	if want := []string{"gh", "api", "-X", "--key"}; !slices.Equal(o.Command, want) {
		t.Errorf("Command = %q, want %q", o.Command, want)
	}

	// Without --: the first word that is not a flag starts the command.
	o, err = parseExec(t, "-r", "1/s", "echo", "-r", "--wait-only")
	if err != nil || !slices.Equal(o.Command, []string{"echo", "-r", "--wait-only"}) || o.WaitOnly {
		t.Errorf("pace exec -r 1/s echo -r --wait-only: %+v, %v; want the command echo -r --wait-only", o, err)
	}
	// Defaults: cost 1, the run margin, in memory.
	o, err = parseExec(t, "--wait-only")
	if err != nil || o.Cost != 1 || o.Margin != defaultRunMargin || o.Shared.Local() || o.Shared.URL != "" || len(o.Command) != 0 {
		t.Errorf("pace exec --wait-only: %+v, %v; want cost 1, margin %v, no store", o, err, defaultRunMargin)
	}
	// --redis: the Redis backend, the default key.
	o, err = parseExec(t, "--redis", "redis://h:1", "-r", "1/s", "--", "true")
	if err != nil || o.Shared.Local() || o.Shared.Key != "default" || o.Shared.URL != "redis://h:1" {
		t.Errorf("pace exec --redis: %+v, %v", o.Shared, err)
	}
}

func TestExecUsageErrors(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"exec"}, "pace exec needs a command to run, after --"},
		{[]string{"exec", "-r", "1/s", "--"}, "pace exec needs a command to run, after --"},
		{[]string{"exec", "--wait-only", "--", "true"}, `--wait-only runs nothing, but a command was given ("true"): leave out one or the other`},
		{[]string{"exec", "-r", "5s", "--", "true"}, `did you mean 5/s?`},
		{[]string{"exec", "--cost", "0", "--cost-rate", "5/s", "--", "true"}, `invalid argument 0 for "--cost": want at least 1`},
		{[]string{"exec", "--cost", "2", "--", "true"}, "--cost gives the call a cost, but no --cost-rate limits costs"},
		{[]string{"exec", "--cost", "6", "--cost-rate", "5/s", "--", "true"}, `invalid argument 6 for "--cost": the call could never be admitted under a cost rule of 5`},
		{[]string{"exec", "--margin", "-1s", "--", "true"}, `invalid argument -1s for "--margin": want at least 0`},
		{[]string{"exec", "--key", "k", "--", "true"}, "--key k shares rate rules and --global-jobs with the other pace processes on this host"},
		{[]string{"exec", "--global-jobs", "1", "--", "true"}, "--global-jobs needs --redis URL (processes sharing a Redis) or --key NAME"},
		{[]string{"exec", "--no-such-flag", "--", "true"}, "unknown flag: --no-such-flag"},
	} {
		code, stdout, stderr := execPace(t, "", tt.args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != ExitUsage || stdout != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "pace: ") ||
			!strings.Contains(lines[0], tt.want) || lines[1] != "Run 'pace exec --help' for usage." {
			t.Errorf("pace %q = %d, stderr:\n%s\nwant 2 and one line with %q, then where the usage is", tt.args, code, stderr, tt.want)
		}
	}
}

func TestExecExitStatus(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "notexec.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\necho never\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args       []string
		stdin      string
		code       int
		out, inErr string
	}{
		{args: []string{"sh", "-c", "echo out; echo err >&2"}, code: 0, out: "out\n", inErr: "err"},
		{args: []string{"sh", "-c", "exit 3"}, code: 3},
		{args: []string{"sh", "-c", "exit 42"}, code: 42},
		{args: []string{"sh", "-c", "kill -KILL $$"}, code: 128 + 9},
		{args: []string{"sh", "-c", "kill -TERM $$"}, code: 128 + 15},
		{args: []string{"cat"}, stdin: "one\ntwo\n", code: 0, out: "one\ntwo\n"},
		{args: []string{"no-such-command-pace"}, code: 127, inErr: "pace: no-such-command-pace: command not found"},
		{args: []string{notExec}, code: 126, inErr: "permission denied (not executable)"},
		{args: []string{dir}, code: 126, inErr: "is a directory"},
	} {
		code, stdout, stderr := execPace(t, tt.stdin, append([]string{"exec", "-r", "1000/s", "--"}, tt.args...)...)
		if code != tt.code || stdout != tt.out || !strings.Contains(stderr, tt.inErr) {
			t.Errorf("pace exec -- %q = %d, stdout %q, stderr %q; want %d, %q, stderr with %q", tt.args, code, stdout, stderr, tt.code, tt.out, tt.inErr)
		}
	}
}

// TestExecNotFoundSpendsNothing: a command that cannot be found takes no
// quota.
func TestExecNotFoundSpendsNothing(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := execPace(t, "", "exec", "--key", "k", "--state", dir, "-r", "1/h", "--", "no-such-command-pace")
	if code != 127 {
		t.Fatalf("exit %d, want 127: %s", code, stderr)
	}
	if code, _, stderr := execPace(t, "", "exec", "--key", "k", "--state", dir, "-r", "1/h", "--wait-only"); code != 0 {
		t.Errorf("the first call after a command not found: exit %d, want 0 (nothing spent): %s", code, stderr)
	}
}

// TestExecSignals: a signal while the command runs goes to it, and pace
// exits with its status; one while the call waits stops pace before
// anything runs.
func TestExecSignals(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	sigs := make(chan os.Signal, 1)
	ios, out, errOut := testIO("")
	done := make(chan int, 1)
	go func() {
		done <- Execute(&Factory{IOStreams: ios, Signals: sigs}, []string{"exec", "--", "sh", "-c",
			`sleep 30 & trap 'echo got TERM; kill $!; exit 7' TERM; touch "$0"; wait`, ready})
	}()
	waitFor(t, "the command to start", func() bool { _, err := os.Stat(ready); return err == nil })
	sigs <- syscall.SIGTERM
	select {
	case code := <-done:
		if code != 7 || out.String() != "got TERM\n" {
			t.Errorf("SIGTERM while the command runs: exit %d, stdout %q; want 7 and the command's trap (stderr %q)", code, out, errOut)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("pace exec did not end after SIGTERM")
	}

	// The quota is full for an hour: the second call waits, and an
	// interrupt stops it, whenever it comes.
	if code, _, stderr := execPace(t, "", "exec", "--key", "full", "--state", dir, "-r", "1/h", "--wait-only"); code != 0 {
		t.Fatalf("first call: exit %d: %s", code, stderr)
	}
	ran := filepath.Join(dir, "ran")
	sigs <- os.Interrupt
	ios, _, errOut = testIO("")
	code := Execute(&Factory{IOStreams: ios, Signals: sigs}, []string{"exec", "--key", "full", "--state", dir, "-r", "1/h", "--", "touch", ran})
	if code != ExitInterrupted || errOut.String() != "pace: SIGINT: stopped before anything ran\n" {
		t.Errorf("SIGINT while waiting: exit %d, stderr %q; want 130 and one line", code, errOut)
	}
	if _, err := os.Stat(ran); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran after SIGINT (%v)", err)
	}
}

func TestExecVerboseWaitOnly(t *testing.T) {
	code, stdout, stderr := execPace(t, "", "exec", "-r", "5/s", "--wait-only", "-v")
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q: %s", code, stdout, stderr)
	}
	at, ok := admittedAt(stderr)
	if !ok || time.Since(at).Abs() > time.Minute {
		t.Errorf("stderr %q: want the admission instant, about now", stderr)
	}
}

// admittedAt reads the instant pace exec -v reports.
func admittedAt(stderr string) (time.Time, bool) {
	for line := range strings.Lines(stderr) {
		rest, ok := strings.CutPrefix(line, "pace: admitted at ")
		if !ok {
			continue
		}
		s, _, _ := strings.Cut(rest, " ")
		at, err := time.Parse(admittedFormat, s)
		return at, err == nil
	}
	return time.Time{}, false
}

func TestExecHelp(t *testing.T) {
	code, stdout, _ := execPace(t, "", "exec", "--help")
	for _, want := range []string{
		`for r in $(cat repos); do pace exec --key gh -r 5000/h -r 10/s -- gh api "repos/$r"; done`,
		"N    the command's exit status, once it ran (128+S if signal S killed it)",
		"127  the command was not found",
		"looks like pace's own failure",
		"--wait-only",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("pace exec --help = %d, want %q in:\n%s", code, want, stdout)
		}
	}
}

// TestExecRootSame: pace exec run from the root that has only it
// (newCmdRootFor) prints and exits as from the whole root: help, flag
// errors, the command's status.
func TestExecRootSame(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"exec", "--help"},
		{"exec", "-h"},
		{"exec"},
		{"exec", "--bogus"},
		{"exec", "-r", "5s", "--", "true"},
		{"exec", "--wait-only", "--", "true"},
		{"exec", "-r", "1000/s", "--", "sh", "-c", "echo out; echo err >&2; exit 3"},
		{"exec", "--key", "same", "--state", dir, "-r", "1000/s", "--wait-only", "-v"},
		{"exec", "--", "no-such-command-pace-test"},
	} {
		run := func(root func(*Factory) *cobra.Command) (int, string, string) {
			ios, out, errOut := testIO("")
			f := &Factory{IOStreams: ios, Signals: make(chan os.Signal, 1)}
			code := executeRoot(f, root(f), args)
			// The admission instant and wait differ from run to run.
			return code, out.String(), regexp.MustCompile(`admitted at \S+ after waiting \S+`).ReplaceAllString(errOut.String(), "admitted at T after waiting D")
		}
		c1, o1, e1 := run(NewCmdRoot)
		c2, o2, e2 := run(func(f *Factory) *cobra.Command { return newCmdRootFor(f, args) })
		if c1 != c2 || o1 != o2 || e1 != e2 {
			t.Errorf("pace %q: from the whole root: exit %d, stdout %q, stderr %q; from exec's own: exit %d, stdout %q, stderr %q",
				args, c1, o1, e1, c2, o2, e2)
		}
	}
}
