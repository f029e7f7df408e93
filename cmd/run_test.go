package cmd

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/throttle"
)

// parseFlags runs the flag parsing of the command newCmd makes on args,
// and returns the options its run function would receive.
func parseFlags[O any](t *testing.T, newCmd func(*Factory, func(*O) error) *cobra.Command, args ...string) (*O, error) {
	t.Helper()
	ios, _, _, _ := Test()
	f := &Factory{IOStreams: ios, Clock: throttle.SystemClock()}
	var got *O
	cmd := newCmd(f, func(o *O) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(ios.Out)
	cmd.SetErr(ios.ErrOut)
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
		"--progress", "never", "--summary", "json", "--grace", "1s", "--shell", "--", "echo", "-n", "{}")
	if err != nil {
		t.Fatal(err)
	}
	c := o.Common
	wantRules := []throttle.Rule{{N: 10, Window: time.Second}, {N: 500, Window: time.Minute}, {N: 12, Window: 3 * time.Second}}
	if !slices.Equal(c.Rules, wantRules) {
		t.Errorf("Rules = %v, want %v", c.Rules, wantRules)
	}
	if c.Jobs != 4 || c.Input != "in.txt" || !c.Null || c.Margin != 50*time.Millisecond || c.Timeout != 2*time.Second ||
		c.Retries != 3 || !c.KeepOrder || !c.Tag || !c.DryRun || !c.Verbose || c.Progress != "never" ||
		c.Summary != "json" || c.Grace != time.Second || !o.Shell {
		t.Errorf("options = %+v, shell %v", c, o.Shell)
	}
	if want := []string{"echo", "-n", "{}"}; !slices.Equal(o.Command, want) {
		t.Errorf("Command = %q, want %q", o.Command, want)
	}
}

func TestRunDefaults(t *testing.T) {
	o, err := parseRun(t)
	if err != nil {
		t.Fatal(err)
	}
	c := o.Common
	if c.Rules != nil || c.Jobs != 0 || c.Input != "-" || c.Progress != "auto" || c.Summary != "text" ||
		c.Grace != 10*time.Second || c.Retries != 0 || c.Timeout != 0 || len(o.Command) != 0 {
		t.Errorf("defaults = %+v, command %q", c, o.Command)
	}
	if err := c.check(); err != nil || c.Jobs != runtime.NumCPU() {
		t.Errorf("check() = %v, Jobs = %d; want nil, %d (the number of CPUs)", err, c.Jobs, runtime.NumCPU())
	}
}

func TestRunCommandFlagsAreTheCommands(t *testing.T) {
	// Without --, flags after the command belong to it, as with xargs.
	o, err := parseRun(t, "-j", "2", "grep", "-v", "-r", "x")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"grep", "-v", "-r", "x"}; !slices.Equal(o.Command, want) || o.Common.Jobs != 2 || o.Common.Rules != nil {
		t.Errorf("Command = %q, jobs %d, rules %v; want %q, 2, none", o.Command, o.Common.Jobs, o.Common.Rules, want)
	}
}

func TestRunFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-r", "10/x"}, `rule "10/x"`},
		{[]string{"-r", "0/s"}, `rule "0/s"`},
		{[]string{"-r", "10/s,"}, `rule ""`},
		{[]string{"-r", ""}, "empty rule list"},
		{[]string{"--progress", "sometimes"}, "want one of auto, always, never"},
		{[]string{"--summary", "xml"}, "want one of text, json, none"},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"-j", "many"}, `invalid argument "many"`},
		{[]string{"--timeout", "5"}, "missing unit"},
	} {
		_, err := parseRun(t, tt.args...)
		var fe *FlagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("pace run %q: error %v, want a FlagError containing %q", tt.args, err, tt.msg)
		}
	}
}

func TestCommonOptionsCheck(t *testing.T) {
	for _, o := range []CommonOptions{
		{Jobs: -1}, {Retries: -1}, {Timeout: -time.Second}, {Margin: -time.Second}, {Grace: -time.Second},
	} {
		var fe *FlagError
		if err := o.check(); !errors.As(err, &fe) {
			t.Errorf("check(%+v) = %v, want a FlagError", o, err)
		}
	}
}

func TestRulesValue(t *testing.T) {
	var rules []throttle.Rule
	v := rulesValue{&rules}
	for _, s := range []string{"10/s", "500/min,12/3s"} {
		if err := v.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if got := v.String(); got != "10/s,500/m,12/3s" {
		t.Errorf("String() = %q", got)
	}
	if err := v.Set("oops"); !errors.Is(err, throttle.ErrInvalidRule) {
		t.Errorf("Set(oops) = %v, want ErrInvalidRule", err)
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
}
