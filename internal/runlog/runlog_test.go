package runlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/internal/resume"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// writeJobLog writes a job log with rows and returns its path.
func writeJobLog(t *testing.T, rules []throttle.Rule, rows ...joblog.Entry) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.log")
	b := []byte(joblog.HeaderFor(rules) + "\n")
	for _, e := range rows {
		b = joblog.AppendEntry(b, e)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readEntries returns the rows of the job log at path.
func readEntries(t *testing.T, path string) []joblog.Entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := joblog.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return log.Entries
}

// argvCommand is a row's Command column: the job's argv joined.
func argvCommand(j *runner.Job) string { return strings.Join(j.Argv, " ") }

// opts are the options of the job log at path of "echo ITEM" jobs.
func opts(path string, mode resume.Mode) Options {
	return Options{Path: path, Resume: mode, Command: argvCommand, Prepare: echoPrepare}
}

// echoPrepare prepares "echo ITEM".
func echoPrepare(job *runner.Job) error { job.Argv = []string{"echo", job.Item}; return nil }

func TestJobLogSeedsTheLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // time.Now() stands still
		now := time.Now()
		// One call an hour ago, two 0.4s ago, one 0.2s ago.
		path := writeJobLog(t, nil,
			joblog.Entry{Seq: 1, Start: now.Add(-time.Hour), Command: "a"},
			joblog.Entry{Seq: 2, Start: now.Add(-400 * time.Millisecond), Command: "b"},
			joblog.Entry{Seq: 3, Start: now.Add(-400 * time.Millisecond), Command: "c"},
			joblog.Entry{Seq: 4, Start: now.Add(-200 * time.Millisecond), Command: "d"},
		)
		rules := []throttle.Rule{{N: 3, Window: time.Second}, {N: 4, Window: 2 * time.Hour}}
		jl, err := Open(opts(path, 0), rules)
		if err != nil {
			t.Fatal(err)
		}
		defer jl.Close()
		lim, err := throttle.New(throttle.Options{Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		recent, err := jl.Seed(lim, rules, now)
		if err != nil || recent != 4 {
			t.Fatalf("seed = %d, %v; want 4 earlier calls within 2h", recent, err)
		}
		// 3/s is full until the calls of 0.4s ago leave its window, and 4/2h
		// until the call of an hour ago leaves its window.
		if d := lim.DelayN(now, 1); d != time.Hour {
			t.Errorf("DelayN(now) after seeding = %v, want 1h", d)
		}
		var nilLog *Log
		if recent, err := nilLog.Seed(lim, rules, now); recent != 0 || err != nil {
			t.Errorf("seed without a job log = %d, %v; want 0, nil", recent, err)
		}
	})
}

// TestSeedFutureRows: a row stamped after now (a clock set back since
// the log was written) records a call made before now. It counts from
// now, the latest it can have come, not until its stamp's window ends:
// a log stamped a year ahead held -r 1/min back for a year. The run says
// so.
func TestSeedFutureRows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		rules, _ := throttle.ParseRules("1/min")
		path := writeJobLog(t, rules,
			joblog.Entry{Seq: 1, Start: now.Add(-30 * time.Second), Command: "echo a"},
			joblog.Entry{Seq: 2, Start: now.Add(365 * 24 * time.Hour), Command: "echo b"})
		jl, err := Open(opts(path, 0), rules)
		if err != nil {
			t.Fatal(err)
		}
		defer jl.Close()
		lim, _ := throttle.New(throttle.Options{Rules: rules})
		if recent, err := jl.Seed(lim, rules, now); err != nil || recent != 2 {
			t.Fatalf("seed = %d, %v; want 2 earlier calls within 1m", recent, err)
		}
		// The progress's ETA counts the earlier calls too (EarlierCalls):
		// it said 8761h for a wait of a minute.
		for _, c := range jl.EarlierCalls() {
			if c.At.After(now) {
				t.Errorf("EarlierCalls holds a call at %v, after now (%v)", c.At, now)
			}
		}
		var b strings.Builder
		jl.Announce(&b, 2, false)
		if !strings.Contains(b.String(), "1 row stamped after this host's clock (by up to 8760h0m0s") {
			t.Errorf("Announce said %q, want it to tell of the row stamped a year ahead", b.String())
		}
	})
}

// TestSeedCountsRowCutShort: the call of a row a killed pace left cut
// short at the end of the log was made, and counts against the rules: at
// its Starttime, or at now when the row lacks it, of its cost, or of one
// that fills every cost rule. Left out, a run started after the crash
// could admit one call over a rule in a window that holds it.
func TestSeedCountsRowCutShort(t *testing.T) {
	// The instants are offsets from time.Now() in the test's bubble,
	// where it stands still.
	for _, tt := range []struct {
		name  string
		rules string
		tail  func(at func(time.Duration) string) string // the row cut short
		cost  int                                        // the cost to ask for
		delay time.Duration
	}{
		// A whole row 30m ago and the row cut short 10m ago fill 2/h until
		// the whole row leaves the window.
		{"with its Starttime", "2/h", func(at func(time.Duration) string) string { return "2\t:\t" + at(-10*time.Minute) + "\t" }, 1, 30 * time.Minute},
		// Without it, the call counts now: 1/h is full for an hour.
		{"without its Starttime", "1/h", func(func(time.Duration) string) string { return "2\t:\t17" }, 1, time.Hour},
		{"cut in its Seq", "1/h", func(func(time.Duration) string) string { return "2" }, 1, time.Hour},
		// Its cost, if the row holds it: 3 of 10 spent 10m ago, 1 more by
		// the whole row 30m ago.
		{"with its cost", "cost:10/h", func(at func(time.Duration) string) string { return "2\t:\t" + at(-10*time.Minute) + "\t     0.1\t3\t" }, 6, 0},
		{"with its cost, room when the whole row leaves", "cost:10/h", func(at func(time.Duration) string) string { return "2\t:\t" + at(-10*time.Minute) + "\t     0.1\t3\t" }, 7, 30 * time.Minute},
		{"with its cost, more than is left", "cost:10/h", func(at func(time.Duration) string) string { return "2\t:\t" + at(-10*time.Minute) + "\t     0.1\t3\t" }, 8, 50 * time.Minute},
		// Else it fills every cost rule for its window, and counts 1 in
		// a count rule.
		{"without its cost", "cost:10/h", func(at func(time.Duration) string) string { return "2\t:\t" + at(-10*time.Minute) + "\t     0.1\t" }, 1, 50 * time.Minute},
		{"without its cost, count rule", "3/h", func(at func(time.Duration) string) string { return "2\t:\t" + at(-10*time.Minute) + "\t     0.1\t" }, 1, 0},
		{"without its Starttime, cost rule", "cost:10/h", func(func(time.Duration) string) string { return "2\t:\t" }, 1, time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				now := time.Now()
				at := func(d time.Duration) string {
					return fmt.Sprintf("%d.%06d", now.Add(d).Unix(), now.Add(d).Nanosecond()/1000)
				}
				rules, err := throttle.ParseRules(tt.rules)
				if err != nil {
					t.Fatal(err)
				}
				path := writeJobLog(t, rules, joblog.Entry{Seq: 1, Start: now.Add(-30 * time.Minute), Command: "echo a"})
				appendRaw(t, path, tt.tail(at))
				jl, err := Open(opts(path, 0), rules)
				if err != nil {
					t.Fatal(err)
				}
				defer jl.Close()
				lim, err := throttle.New(throttle.Options{Rules: rules})
				if err != nil {
					t.Fatal(err)
				}
				if recent, err := jl.Seed(lim, rules, now); err != nil || recent != 2 {
					t.Fatalf("Seed = %d, %v; want 2 earlier calls within the hour", recent, err)
				}
				if d := lim.DelayN(now, tt.cost); d != tt.delay {
					t.Errorf("DelayN(now, %d) after seeding = %v, want %v", tt.cost, d, tt.delay)
				}
				if calls := jl.EarlierCalls(); len(calls) != 2 {
					t.Errorf("EarlierCalls = %v, want the whole row's and the cut row's", calls)
				}
			})
		})
	}
}

// TestSeedCountsStandIn: the run that finds a row cut short replaces it by
// a whole row standing in for it, and a later run counts that row's call as
// the first counted the cut row's: at the instant the first run found it
// when the row lacked its Starttime, and filling a cost rule when it
// lacked its cost. Cut off and gone, it would count in no later run.
func TestSeedCountsStandIn(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rules string
		tail  func(now time.Time) string
		delay [2]time.Duration // for the first run, and one 10m later
	}{
		{"without its Starttime", "1/h", func(time.Time) string { return "2\t:\t17" }, [2]time.Duration{time.Hour, 50 * time.Minute}},
		{"without its cost", "cost:10/h", func(now time.Time) string {
			return fmt.Sprintf("2\t:\t%d.000000\t     0.1\t", now.Add(-10*time.Minute).Unix())
		}, [2]time.Duration{50 * time.Minute, 40 * time.Minute}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				now := time.Now() // a whole second, in the bubble
				rules, _ := throttle.ParseRules(tt.rules)
				path := writeJobLog(t, rules)
				appendRaw(t, path, tt.tail(now))
				for i, at := range []time.Time{now, now.Add(10 * time.Minute)} {
					time.Sleep(time.Until(at))
					jl, err := Open(opts(path, 0), rules)
					if err != nil {
						t.Fatal(err)
					}
					lim, _ := throttle.New(throttle.Options{Rules: rules})
					if _, err := jl.Seed(lim, rules, at); err != nil {
						t.Fatal(err)
					}
					jl.Close()
					if want := tt.delay[i]; lim.DelayN(at, 1) != want {
						t.Errorf("run %d: DelayN(now, 1) after seeding = %v, want %v", i+1, lim.DelayN(at, 1), want)
					}
				}
				if rows := readEntries(t, path); len(rows) != 1 || !rows[0].StandsIn() {
					t.Errorf("the log holds %+v, want the row standing in for the row cut short", rows)
				}
			})
		})
	}
}

// appendRaw appends text to the file at path.
func appendRaw(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// TestAnnounceRowCutShort: the run says once that the log ended in a row
// cut short, quoting it with the credentials of its Command hidden, and
// how its call counts.
func TestAnnounceRowCutShort(t *testing.T) {
	now := time.Unix(1800000000, 0)
	rules := []throttle.Rule{{N: 10, Window: time.Hour, Cost: true}}
	for _, tt := range []struct {
		tail, want string
	}{
		{"3\t:\t1700000000.500000\t     0.1\t",
			`"3\t:\t1700000000.500000\t     0.1\t"; its call counts against the rules at its Starttime, 2023-11-14T22:13:20.500000Z, ` +
				`at a cost that fills every cost rule (its Send, the call's cost, is cut off); replaced by a whole row that keeps its call for later runs and pace audit (Exitval -2), and is no row of item 3 for --resume`},
		{"3\t:\t17",
			`"3\t:\t17"; its Starttime is cut off: its call counts against the rules from 2027-01-15T08:00:00.000000Z, when this run started, ` +
				`the latest it can have come, at a cost that fills every cost rule (its Send, the call's cost, is cut off); replaced by a whole row that keeps its call for later runs and pace audit (Exitval -2), and is no row of item 3 for --resume`},
		{"3\t:\t1700000000.500000\t     0.1\t2\t0\t0\t0\tcurl -u me:hunter2 http://h/",
			`"3\t:\t1700000000.500000\t     0.1\t2\t0\t0\t0\tcurl -u me:REDACTED http://h/"; its call counts against the rules at its Starttime, 2023-11-14T22:13:20.500000Z; replaced by a whole row that keeps its call for later runs and pace audit (Exitval -2), and is no row of item 3 for --resume`},
	} {
		path := writeJobLog(t, rules)
		fi, _ := os.Stat(path)
		tail := strings.ReplaceAll(tt.tail, "\\t", "\t")
		if strings.Count(tail, "\t") == 8 { // cut in its Command: at a page boundary
			appendRaw(t, path, strings.Repeat("\n", int(4096-(fi.Size()+int64(len(tail)))%4096)))
		}
		appendRaw(t, path, tail)
		o := opts(path, 0)
		o.Redact = func(s string) string { return strings.ReplaceAll(s, "hunter2", "REDACTED") }
		jl, err := Open(o, rules)
		if err != nil {
			t.Fatal(err)
		}
		lim, _ := throttle.New(throttle.Options{Rules: rules})
		jl.Seed(lim, rules, now)
		var b strings.Builder
		jl.Announce(&b, 0, false)
		jl.Close()
		if want := "pace: job log " + path + " ended in a row cut short (a pace killed as it wrote it): " + tt.want + "\n"; b.String() != want {
			t.Errorf("Announce =\n%s\nwant\n%s", b.String(), want)
		}
	}
}

func TestJobLogRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.log")
	rules := []throttle.Rule{{N: 5, Window: time.Second}}
	jl, err := Open(Options{Path: path, Command: argvCommand, Prepare: echoPrepare}, rules)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1700000000, 123456789)
	if err := jl.Record(&runner.Result{
		Job:   runner.Job{Seq: 7, Argv: []string{"GET", "http://REDACTED@127.0.0.1/x"}},
		Start: start, Runtime: 1500 * time.Millisecond, ExitCode: 1,
		HTTP: &runner.HTTPInfo{StatusCode: 503, Bytes: 0},
	}); err != nil {
		t.Fatal(err)
	}
	out := runner.NewCapture(0, "")
	out.Write([]byte("hello\n"))
	jl.Record(&runner.Result{Job: runner.Job{Seq: 8, Argv: []string{"GET", "http://h/y"}}, Start: start, Stdout: out,
		HTTP: &runner.HTTPInfo{StatusCode: 200, Bytes: 6}})
	if err := jl.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := joblog.HeaderFor(rules) + "\n" +
		"7\t:\t1700000000.123457\t     1.500\t0\t0\t503\t0\tGET http://REDACTED@127.0.0.1/x\n" +
		"8\t:\t1700000000.123457\t     0.000\t0\t6\t0\t0\tGET http://h/y\n"
	if string(got) != want {
		t.Errorf("job log =\n%q\nwant\n%q", got, want)
	}
}

func TestJobLogRecordsCosts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cost.log")
	rules := []throttle.Rule{{N: 100, Window: time.Second, Cost: true}}
	jl, err := Open(opts(path, 0), rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []runner.Result{
		{Job: runner.Job{Seq: 1, Argv: []string{"a"}}},                   // cost 0 means 1
		{Job: runner.Job{Seq: 2, Argv: []string{"b"}, Cost: 7}},          // the estimate
		{Job: runner.Job{Seq: 3, Argv: []string{"c"}, Cost: 7}, Cost: 3}, // the cost learned from the call
	} {
		r.Start = time.Unix(1, 0)
		jl.Record(&r)
	}
	jl.Close()
	var sends []int64
	for _, e := range readEntries(t, path) {
		sends = append(sends, e.Send)
	}
	if len(sends) != 3 || sends[0] != 1 || sends[1] != 7 || sends[2] != 3 {
		t.Errorf("Send columns %v, want 1 7 3", sends)
	}
}

func TestOpenJobLogErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.log")
	os.WriteFile(bad, []byte("1\t:\tnever\t1\t0\t0\t0\t0\tx\n"), 0o644)
	_, err := Open(opts(bad, 0), nil)
	if !errors.Is(err, joblog.ErrSyntax) || !strings.HasPrefix(err.Error(), "job log "+bad+": ") || !strings.Contains(err.Error(), `"1\t:\tnever`) {
		t.Errorf("Open(malformed) = %v, want a syntax error naming the file and quoting the line", err)
	}
	dir := t.TempDir()
	if _, err := Open(opts(dir, 0), nil); err == nil ||
		err.Error() != "job log "+dir+" is a directory, not a regular file: pace reads and appends to a file of its own" {
		t.Errorf("Open(a directory) = %v", err)
	}
	if jl, err := Open(opts("", 0), nil); jl != nil || err != nil {
		t.Errorf("Open without --joblog = %v, %v; want nil, nil", jl, err)
	}
	// A nil job log does nothing.
	var jl *Log
	if jl.Record(&runner.Result{}) != nil || jl.Close() != nil || jl.Skipped() != 0 || jl.ToRun(5) != 5 {
		t.Errorf("a nil job log did something")
	}
}

// TestJobLogResume: what a resumed run skips, says and counts.
func TestJobLogResume(t *testing.T) {
	at := time.Unix(1700000000, 0)
	path := writeJobLog(t, nil,
		joblog.Entry{Seq: 1, Start: at, Command: "echo a"},
		joblog.Entry{Seq: 2, Start: at, Exit: 1, Command: "echo b"},
		joblog.Entry{Seq: 3, Start: at, Command: "echo c"},
	)
	for _, tt := range []struct {
		o        Options
		announce string
		run      []string
		toRun    int64
	}{
		{opts(path, resume.All),
			"pace: resuming from " + path + ": it records 3 items as run, skipped\n", []string{"d"}, 1},
		{opts(path, resume.Failed),
			"pace: resuming from " + path + ": it records 2 items that succeeded, skipped, and 1 that failed, run again\n", []string{"b", "d"}, 2},
		{opts(path, 0), "", []string{"a", "b", "c", "d"}, 4},
	} {
		jl, err := Open(tt.o, nil)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		jl.Announce(&b, 0, false)
		if b.String() != tt.announce {
			t.Errorf("%+v: announce = %q, want %q", tt.o.Resume, b.String(), tt.announce)
		}
		out := make(chan runner.Item, 10)
		if err := jl.ReadItems(context.Background(), strings.NewReader("a\nb\nc\nd\n"), items.ReadOptions{}, out); err != nil {
			t.Fatal(err)
		}
		close(out)
		var run []string
		for it := range out {
			if !it.Skip {
				run = append(run, it.Text)
			}
		}
		if strings.Join(run, " ") != strings.Join(tt.run, " ") || jl.Skipped() != int64(4-len(tt.run)) || jl.ToRun(4) != tt.toRun {
			t.Errorf("%+v: items run %q (skipped %d, toRun(4) = %d), want %q (toRun %d)", tt.o.Resume, run, jl.Skipped(), jl.ToRun(4), tt.run, tt.toRun)
		}
		jl.Close()
	}
	// An input that is not the one the log was written for is refused.
	jl, _ := Load(opts(path, resume.All))
	err := jl.ReadItems(context.Background(), strings.NewReader("a\nX\nc\n"), items.ReadOptions{}, make(chan runner.Item, 10))
	if !errors.Is(err, resume.ErrInputChanged) {
		t.Errorf("readItems of another input = %v, want ErrInputChanged", err)
	}
}

func TestJobLogAnnounceVerbose(t *testing.T) {
	jl := &Log{path: "x.log", earlier: &joblog.Log{}}
	var b strings.Builder
	jl.Announce(&b, 3, true)
	jl.Announce(&b, 3, false)
	jl.Announce(&b, 0, true)
	if want := "pace: job log x.log: 3 earlier calls still count against the rules\n"; b.String() != want {
		t.Errorf("announce = %q, want %q once", b.String(), want)
	}
}
