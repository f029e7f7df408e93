package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/throttle"
)

func auditData(name string) string { return filepath.Join("testdata", "audit", name) }

func TestAuditFlagsToOptions(t *testing.T) {
	o, err := parseFlags(t, NewCmdAudit, "-r", "5/s", "-r", "12/3s,10000/day", "--cost-rate", "90000/min", "-j", "4", "--json", "run.log")
	if err != nil {
		t.Fatal(err)
	}
	want := []throttle.Rule{{N: 5, Window: time.Second}, {N: 12, Window: 3 * time.Second}, {N: 10000, Window: 24 * time.Hour},
		{N: 90000, Window: time.Minute, Cost: true}}
	if !slices.Equal(o.Rules, want) || o.Jobs != 4 || !o.JSON || o.File != "run.log" {
		t.Errorf("options = %+v, want rules %v, jobs 4, json, file run.log", o, want)
	}
	if o, err := parseFlags(t, NewCmdAudit); err != nil || o.Rules != nil || o.Jobs != 0 || o.JSON || o.File != "" {
		t.Errorf("defaults = %+v, %v; want no rules, -j 0, text, stdin", o, err)
	}
}

func TestAuditUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{auditData("ok.log")}, "pace: audit: " + auditData("ok.log") + " names no rules: give the rules to check with -r N/PERIOD (and --cost-rate)\n"},
		{[]string{"-r", "5/x", auditData("ok.log")}, `pace: invalid argument "5/x" for "-r, --rate" flag: rule "5/x": want`},
		{[]string{"-r", "5/s", "-j", "-1", "x.log"}, `pace: invalid argument -1 for "-j, --jobs": want at least 0`},
		{[]string{"-r", "5/s", "a.log", "b.log"}, "pace: accepts at most 1 arg(s), received 2"},
		{[]string{"-r", "5/s", auditData("missing.log")}, "pace: audit: open " + auditData("missing.log") + ": no such file or directory\n"},
		{[]string{"-r", "5/s", auditData("bad.log")},
			`pace: audit: ` + auditData("bad.log") + `: job log line 3: Exitval "ok" is not an integer: "2\t:\t1700000000.5\t0.1\t0\t0\tok\t0\techo 2"`},
		{[]string{"-r", "5/s", "--json", auditData("bad.log")}, `pace: audit: ` + auditData("bad.log") + `: job log line 3`},
	} {
		code, stdout, stderr := execPace(t, "", append([]string{"audit"}, tt.args...)...)
		if code != ExitUsage || stdout != "" || !strings.HasPrefix(stderr, tt.want) {
			t.Errorf("pace audit %q = exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, and %q", tt.args, code, stdout, stderr, tt.want)
		}
	}
}

func TestAuditKeptLog(t *testing.T) {
	code, out, stderr := execPace(t, "", "audit", "-r", "5/s,12/3s", auditData("ok.log"))
	want := `job log testdata/audit/ok.log: 10 calls (0 failed), 2023-11-14T22:13:20.000000Z to 2023-11-14T22:13:21.004000Z

RULE   PEAK  USAGE  VIOLATIONS  FIRST SEQ
5/s    5     100%   0           -
12/3s  10    83%    0           -

makespan    1.004s
fastest     1s  (the rules alone)
efficiency  99.6%

ok: every rule kept
`
	if code != ExitOK || out != want || stderr != "" {
		t.Errorf("pace audit ok.log = exit %d, stderr %q, stdout:\n%s\nwant exit 0 and:\n%s", code, stderr, out, want)
	}
}

func TestAuditViolatingLog(t *testing.T) {
	code, out, _ := execPace(t, "", "audit", "-r", "5/s", "-r", "12/3s", "--json", auditData("violating.log"))
	// Seq 6 was killed (Exitval -1, Signal 15): it still counts as a call.
	want := `{"input":"testdata/audit/violating.log","format":"joblog","ok":false,"calls":8,"failed":1,` +
		`"first":"2023-11-14T22:13:20.000000Z","last":"2023-11-14T22:13:22.500000Z",` +
		`"makespan_seconds":2.5,"fastest_seconds":1,"efficiency":0.4,"jobs":0,"median_runtime_seconds":0.2,"rules":[` +
		`{"rule":"5/s","n":5,"window_seconds":1,"cost":false,"peak":6,"peak_usage":1.2,"violations":2,"first_seq":6,"first_at":"2023-11-14T22:13:20.900000Z","unproven":false},` +
		`{"rule":"12/3s","n":12,"window_seconds":3,"cost":false,"peak":8,"peak_usage":0.667,"violations":0,"first_seq":null,"first_at":null,"unproven":false}],"cut_short":null,"stand_ins":[]}` + "\n"
	if code != ExitFailed || out != want {
		t.Errorf("pace audit --json violating.log = exit %d:\n%s\nwant exit 1 and:\n%s", code, out, want)
	}

	_, out, _ = execPace(t, "", "audit", "-r", "5/s,12/3s", auditData("violating.log"))
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
	path := filepath.Join("..", "internal", "joblog", "testdata", "joblog", "gnu-parallel.log")
	code, out, stderr := execPace(t, "", "audit", "-r", "10/s", path)
	if code != ExitOK || !strings.Contains(out, ": 6 calls (2 failed)") {
		t.Errorf("pace audit -r 10/s gnu-parallel.log = exit %d, stderr %q:\n%s\nwant 6 calls, 2 failed", code, stderr, out)
	}
	// Starts at .271 .288 .309 .329 (seq 4) .354 (seq 5) .375 (seq 6).
	code, out, _ = execPace(t, "", "audit", "-r", "3/s", "--json", path)
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
		t.Errorf("pace audit -r 3/s gnu-parallel.log = exit %d, %+v; want exit 1, 6 calls, 3 violations from seq 4", code, rep)
	}
}

func TestAuditTimestamps(t *testing.T) {
	// 0, 0.5, 0.9 and 2.0 seconds past 1700000000, in both notations.
	code, out, _ := execPace(t, "", "audit", "-r", "2/s", auditData("timestamps.txt"))
	if code != ExitFailed {
		t.Errorf("pace audit timestamps.txt = exit %d, want 1", code)
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
	code, out, _ = execPace(t, "1700000000.0\n1700000001.0\n", "audit", "-r", "1/s", "--json", "-")
	if code != ExitOK || !strings.HasPrefix(out, `{"input":"stdin","format":"timestamps","ok":true,"calls":2,`) {
		t.Errorf("pace audit - (stdin) = exit %d, %s", code, out)
	}
	// A timestamp that does not parse is quoted.
	code, _, stderr := execPace(t, "1700000000\nyesterday\n", "audit", "-r", "1/s")
	if code != ExitUsage || !strings.Contains(stderr, "timestamps line 2") || !strings.Contains(stderr, `"yesterday"`) {
		t.Errorf("pace audit with a bad timestamp = exit %d, stderr %q", code, stderr)
	}
}

func TestAuditJobsAndRuntime(t *testing.T) {
	// ok.log: 10 jobs of 0.5s. With -j 2 the fastest legal schedule is
	// 0, 0, .5, .5, 1, 1, 1.5, 1.5, 2, 2 seconds.
	code, out, _ := execPace(t, "", "audit", "-r", "5/s", "-j", "2", "--json", auditData("ok.log"))
	if code != ExitOK || !strings.Contains(out, `"makespan_seconds":1.004,"fastest_seconds":2,"efficiency":1.992,"jobs":2,"median_runtime_seconds":0.5`) {
		t.Errorf("pace audit -j 2 ok.log = exit %d: %s", code, out)
	}
	code, out, _ = execPace(t, "", "audit", "-r", "5/s", "-j", "2", auditData("ok.log"))
	if code != ExitOK || !strings.Contains(out, "fastest     2s  (the rules, -j 2, median job runtime 500ms)\n") {
		t.Errorf("pace audit -j 2 ok.log = exit %d:\n%s", code, out)
	}
}

func TestAuditEmptyInput(t *testing.T) {
	code, out, _ := execPace(t, "\n\n", "audit", "-r", "5/s", "--json")
	want := `{"input":"stdin","format":"timestamps","ok":true,"calls":0,"failed":0,"first":null,"last":null,` +
		`"makespan_seconds":0,"fastest_seconds":0,"efficiency":null,"jobs":0,"median_runtime_seconds":0,"rules":[` +
		`{"rule":"5/s","n":5,"window_seconds":1,"cost":false,"peak":0,"peak_usage":0,"violations":0,"first_seq":null,"first_at":null,"unproven":false}],"cut_short":null,"stand_ins":[]}` + "\n"
	if code != ExitOK || out != want {
		t.Errorf("pace audit of nothing = exit %d:\n%s\nwant\n%s", code, out, want)
	}
}

// TestAuditRulesFromHeader: without -r, the rules the job log's header
// names; cost rules count the Send column.
func TestAuditRulesFromHeader(t *testing.T) {
	rules := []throttle.Rule{{N: 2, Window: time.Second}, {N: 10, Window: time.Second, Cost: true}}
	at := time.Unix(1700000000, 0)
	path := writeJobLog(t, rules,
		joblog.Entry{Seq: 1, Start: at, Send: 4, Command: "a"},
		joblog.Entry{Seq: 2, Start: at.Add(100 * time.Millisecond), Send: 7, Command: "b"},
		joblog.Entry{Seq: 3, Start: at.Add(1100 * time.Millisecond), Send: 1, Command: "c"},
	)
	code, out, stderr := execPace(t, "", "audit", path)
	for _, want := range []string{"2/s        2     100%   0           -\n", "cost:10/s  11    110%   1           2\n",
		"BROKEN: cost:10/s (1 violation, first at seq 2)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("pace audit %s = exit %d, stderr %q:\n%s\nwant a line %q", filepath.Base(path), code, stderr, out, want)
		}
	}
	if code != ExitFailed {
		t.Errorf("pace audit = exit %d, want 1", code)
	}
}

// TestAuditWriteFails: a report that cannot be written (a full disk)
// exits 2, never 1: 1 says a rule was broken, and these calls kept it. A
// reader gone (| head) is 141, as for every command of pace.
func TestAuditWriteFails(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		say  bool
	}{
		{syscall.ENOSPC, ExitUsage, true},
		{syscall.EPIPE, ExitBrokenPipe, false},
	} {
		ios, _, errOut := testIO("1700000000\n1700000002\n")
		ios.Out = failingWriter{&os.PathError{Op: "write", Path: "/dev/stdout", Err: tc.err}}
		code := Execute(&Factory{IOStreams: ios}, []string{"audit", "-r", "1/s"})
		said := strings.HasPrefix(errOut.String(), "pace: audit: write report: ")
		if code != tc.code || said != tc.say {
			t.Errorf("pace audit with stdout failing with %v = exit %d, stderr %q; want exit %d (error shown: %v)", tc.err, code, errOut, tc.code, tc.say)
		}
	}
}

// TestAuditRulesNeverBound: when the rules allow every call at once (a
// short log under 10000/day), the fastest legal makespan is 0s and
// fastest/makespan would read 0.0%: the report says the efficiency has no
// meaning instead, and JSON gives null.
func TestAuditRulesNeverBound(t *testing.T) {
	code, out, _ := execPace(t, "1700000000\n1700000001\n1700000003\n", "audit", "-r", "10000/day")
	for _, want := range []string{
		"timestamps stdin: 3 calls,",
		"fastest     0s  (the rules alone)\n",
		"efficiency  n/a: the rules allow all 3 calls at once, so they never held this run back\n",
	} {
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("pace audit -r 10000/day = exit %d:\n%s\nwant a line %q", code, out, want)
		}
	}
	if strings.Contains(out, "0.0%") {
		t.Errorf("pace audit -r 10000/day:\n%s\nshows an efficiency of 0.0%%", out)
	}
	code, out, _ = execPace(t, "1700000000\n1700000001\n1700000003\n", "audit", "-r", "10000/day", "--json")
	if code != ExitOK || !strings.Contains(out, `"makespan_seconds":3,"fastest_seconds":0,"efficiency":null,`) {
		t.Errorf("pace audit -r 10000/day --json = exit %d:\n%s\nwant efficiency null", code, out)
	}
	// One call: "1 call", not "1 calls".
	_, out, _ = execPace(t, "1700000000\n", "audit", "-r", "1/s")
	if !strings.Contains(out, "timestamps stdin: 1 call,") || !strings.Contains(out, "efficiency  n/a: the rules allow the 1 call at once") {
		t.Errorf("pace audit of one call:\n%s", out)
	}
}

// TestPlotStdoutClosed: pace plot -o - whose reader is gone (| head -c1)
// exits 141 without a word, as every command of pace does; it said
// "write: broken pipe" and exited 1.
func TestPlotStdoutClosed(t *testing.T) {
	ios, _, errOut := testIO("Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n" +
		"1\t:\t1700000000.000\t0.1\t0\t0\t0\t0\tGET x\n")
	ios.Out = failingWriter{&os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}}
	if code := Execute(&Factory{IOStreams: ios}, []string{"plot", "-r", "1/s", "-o", "-"}); code != ExitBrokenPipe || errOut.String() != "" {
		t.Errorf("pace plot -o - with its reader gone = exit %d, stderr %q; want 141 and nothing said", code, errOut)
	}
}
