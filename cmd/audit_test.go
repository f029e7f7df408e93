package cmd

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/throttle"
)

// runAuditCmd runs pace audit with args and stdin, and returns its
// stdout, stderr and exit code.
func runAuditCmd(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ios, in, out, errOut := Test()
	in.WriteString(stdin)
	f := &Factory{IOStreams: ios, Clock: throttle.SystemClock()}
	cmd := NewCmdAudit(f, nil)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &FlagError{err: err} })
	err := cmd.Execute()
	var exitErr *ExitError
	switch {
	case err == nil:
		code = ExitOK
	case errors.As(err, &exitErr):
		code = exitErr.Code
	default: // flag and argument errors, as Execute reports them
		errOut.WriteString(err.Error())
		code = ExitUsage
	}
	return out.String(), errOut.String(), code
}

func auditData(name string) string { return filepath.Join("testdata", "audit", name) }

func TestAuditFlagsToOptions(t *testing.T) {
	ios, _, _, _ := Test()
	var got *AuditOptions
	cmd := NewCmdAudit(&Factory{IOStreams: ios}, func(o *AuditOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-r", "5/s", "-r", "12/3s,10000/day", "-j", "4", "--json", "run.log"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want := []throttle.Rule{{N: 5, Window: time.Second}, {N: 12, Window: 3 * time.Second}, {N: 10000, Window: 24 * time.Hour}}
	if !slices.Equal(got.Rules, want) || got.Jobs != 4 || !got.JSON || got.File != "run.log" {
		t.Errorf("options = %+v, want rules %v, jobs 4, json, file run.log", got, want)
	}
}

func TestAuditUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{auditData("ok.log")},                   // no rules
		{"-r", "5/x", auditData("ok.log")},      // bad rule
		{"-r", "5/s", "-j", "-1", "x.log"},      // bad -j
		{"-r", "5/s", "a.log", "b.log"},         // two files
		{"-r", "5/s", auditData("missing.log")}, // unreadable file
		{"-r", "5/s", auditData("bad.log")},     // malformed row
		{"-r", "5/s", "--json", auditData("bad.log")},
	} {
		out, errOut, code := runAuditCmd(t, "", args...)
		if code != ExitUsage {
			t.Errorf("pace audit %q: exit %d, want %d; stderr %q", args, code, ExitUsage, errOut)
		}
		if out != "" {
			t.Errorf("pace audit %q: stdout %q, want none", args, out)
		}
	}
	_, errOut, _ := runAuditCmd(t, "", "-r", "5/s", auditData("bad.log"))
	for _, want := range []string{"line 3", `Exitval "ok" is not an integer`, `"2\t:\t1700000000.5\t0.1\t0\t0\tok\t0\techo 2"`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("pace audit bad.log: stderr %q does not contain %q", errOut, want)
		}
	}
}

func TestAuditKeptLog(t *testing.T) {
	out, errOut, code := runAuditCmd(t, "", "-r", "5/s,12/3s", auditData("ok.log"))
	if code != ExitOK {
		t.Fatalf("pace audit ok.log: exit %d, want 0; stderr %q", code, errOut)
	}
	want := `job log testdata/audit/ok.log: 10 calls (0 failed), 2023-11-14T22:13:20.000000Z to 2023-11-14T22:13:21.004000Z

RULE   PEAK  USAGE  VIOLATIONS  FIRST SEQ
5/s    5     100%   0           -
12/3s  10    83%    0           -

makespan    1.004s
fastest     1s  (the rules alone)
efficiency  99.6%

ok: every rule kept
`
	if out != want {
		t.Errorf("pace audit ok.log:\n%s\nwant:\n%s", out, want)
	}
}

func TestAuditViolatingLog(t *testing.T) {
	out, _, code := runAuditCmd(t, "", "-r", "5/s", "-r", "12/3s", "--json", auditData("violating.log"))
	if code != ExitFailed {
		t.Errorf("pace audit violating.log: exit %d, want %d", code, ExitFailed)
	}
	// Seq 6 was killed (Exitval -1, Signal 15): it still counts as a call.
	want := `{"input":"testdata/audit/violating.log","format":"joblog","ok":false,"calls":8,"failed":1,` +
		`"first":"2023-11-14T22:13:20.000000Z","last":"2023-11-14T22:13:22.500000Z",` +
		`"makespan_seconds":2.5,"fastest_seconds":1,"efficiency":0.4,"jobs":0,"median_runtime_seconds":0.2,"rules":[` +
		`{"rule":"5/s","n":5,"window_seconds":1,"peak":6,"peak_usage":1.2,"violations":2,"first_seq":6,"first_at":"2023-11-14T22:13:20.900000Z"},` +
		`{"rule":"12/3s","n":12,"window_seconds":3,"peak":8,"peak_usage":0.667,"violations":0,"first_seq":null,"first_at":null}]}` + "\n"
	if out != want {
		t.Errorf("pace audit --json violating.log:\n%s\nwant:\n%s", out, want)
	}

	out, _, _ = runAuditCmd(t, "", "-r", "5/s,12/3s", auditData("violating.log"))
	for _, want := range []string{
		"5/s    6     120%   2           6\n",
		"12/3s  8     67%    0           -\n",
		"BROKEN: 5/s (2 violations, first at seq 6)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("pace audit violating.log:\n%s\nwant a line %q", out, want)
		}
	}
}

func TestAuditGNUParallelLog(t *testing.T) {
	path := filepath.Join("..", "runner", "testdata", "joblog", "gnu-parallel.log")
	out, errOut, code := runAuditCmd(t, "", "-r", "10/s", path)
	if code != ExitOK {
		t.Fatalf("pace audit -r 10/s gnu-parallel.log: exit %d; stderr %q", code, errOut)
	}
	if !strings.Contains(out, ": 6 calls (2 failed)") {
		t.Errorf("pace audit gnu-parallel.log:\n%s\nwant 6 calls, 2 failed", out)
	}
	// Starts at .271 .288 .309 .329 (seq 4) .354 (seq 5) .375 (seq 6).
	out, _, code = runAuditCmd(t, "", "-r", "3/s", "--json", path)
	var rep struct {
		Calls int
		Rules []struct {
			Violations int
			FirstSeq   int64 `json:"first_seq"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("pace audit --json: %v\n%s", err, out)
	}
	if code != ExitFailed || rep.Calls != 6 || rep.Rules[0].Violations != 3 || rep.Rules[0].FirstSeq != 4 {
		t.Errorf("pace audit -r 3/s gnu-parallel.log: exit %d, %+v; want exit 1, 6 calls, 3 violations from seq 4", code, rep)
	}
}

func TestAuditTimestamps(t *testing.T) {
	// 0, 0.5, 0.9 and 2.0 seconds past 1700000000, in both notations.
	out, _, code := runAuditCmd(t, "", "-r", "2/s", auditData("timestamps.txt"))
	if code != ExitFailed {
		t.Errorf("pace audit timestamps.txt: exit %d, want 1", code)
	}
	for _, want := range []string{
		"timestamps testdata/audit/timestamps.txt: 4 calls, 2023-11-14T22:13:20.000000Z to 2023-11-14T22:13:22.000000Z\n",
		"RULE  PEAK  USAGE  VIOLATIONS  FIRST CALL\n",
		"2/s   3     150%   1           3\n",
		"makespan    2s\n",
		"fastest     1s  (the rules alone)\n",
		"efficiency  50.0%\n",
		"BROKEN: 2/s (1 violation, first at call 3)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("pace audit timestamps.txt:\n%s\nwant a line %q", out, want)
		}
	}

	// From stdin, with "-".
	out, _, code = runAuditCmd(t, "1700000000.0\n1700000001.0\n", "-r", "1/s", "--json", "-")
	if code != ExitOK || !strings.Contains(out, `"input":"stdin","format":"timestamps","ok":true,"calls":2`) {
		t.Errorf("pace audit - (stdin): exit %d, %s", code, out)
	}
	// A timestamp that does not parse is quoted.
	_, errOut, code := runAuditCmd(t, "1700000000\nyesterday\n", "-r", "1/s")
	if code != ExitUsage || !strings.Contains(errOut, `timestamps line 2`) || !strings.Contains(errOut, `"yesterday"`) {
		t.Errorf("pace audit with a bad timestamp: exit %d, stderr %q", code, errOut)
	}
}

func TestAuditJobsAndRuntime(t *testing.T) {
	// ok.log: 10 jobs of 0.5s. With -j 2 the fastest legal schedule is
	// 0, 0, .5, .5, 1, 1, 1.5, 1.5, 2, 2 seconds.
	out, _, code := runAuditCmd(t, "", "-r", "5/s", "-j", "2", "--json", auditData("ok.log"))
	if code != ExitOK {
		t.Errorf("exit %d, want 0", code)
	}
	if !strings.Contains(out, `"makespan_seconds":1.004,"fastest_seconds":2,"efficiency":1.992,"jobs":2,"median_runtime_seconds":0.5`) {
		t.Errorf("pace audit -j 2 ok.log: %s", out)
	}
}

func TestAuditEmptyInput(t *testing.T) {
	out, _, code := runAuditCmd(t, "\n\n", "-r", "5/s", "--json")
	want := `{"input":"stdin","format":"timestamps","ok":true,"calls":0,"failed":0,"first":null,"last":null,` +
		`"makespan_seconds":0,"fastest_seconds":0,"efficiency":1,"jobs":0,"median_runtime_seconds":0,"rules":[` +
		`{"rule":"5/s","n":5,"window_seconds":1,"peak":0,"peak_usage":0,"violations":0,"first_seq":null,"first_at":null}]}` + "\n"
	if code != ExitOK || out != want {
		t.Errorf("pace audit of nothing: exit %d,\n%s\nwant\n%s", code, out, want)
	}
}

func TestMedian(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	tests := []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{ms(7), 7 * time.Millisecond},
		{ms(9, 1, 5), 5 * time.Millisecond},
		{ms(4, 1, 2, 100), 3 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := median(tt.in); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}
