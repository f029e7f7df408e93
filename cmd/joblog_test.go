package cmd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/throttle"
)

func TestJobLogOptionsCheck(t *testing.T) {
	for _, tt := range []struct {
		o    JobLogOptions
		want string
	}{
		{JobLogOptions{}, ""},
		{JobLogOptions{JobLog: "x", Resume: true}, ""},
		{JobLogOptions{JobLog: "x", ResumeFailed: true}, ""},
		{JobLogOptions{Resume: true}, "--resume needs --joblog FILE"},
		{JobLogOptions{ResumeFailed: true}, "--resume-failed needs --joblog FILE"},
		{JobLogOptions{JobLog: "x", Resume: true, ResumeFailed: true}, "--resume and --resume-failed cannot be used together"},
	} {
		err := tt.o.check()
		var fe *FlagError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v.check() = %v, want nil", tt.o, err)
		case tt.want != "" && (!errors.As(err, &fe) || err.Error() != tt.want):
			t.Errorf("%+v.check() = %v, want a FlagError %q", tt.o, err, tt.want)
		}
	}
}

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

// TestJobLogQuotaAcrossRuns: a run sharing a job log with an earlier one
// counts that run's recent admissions against the rules, and says so
// with -v.
func TestJobLogQuotaAcrossRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		path := writeJobLog(t, nil,
			joblog.Entry{Seq: 1, Start: now.Add(-500 * time.Millisecond), Command: "fake x"},
			joblog.Entry{Seq: 2, Start: now.Add(-500 * time.Millisecond), Command: "fake y"},
		)
		o := testOptions(t, 1, "2/s")
		o.JobLog, o.Verbose, o.Summary = path, true, summaryNone
		ts := newTestSession(t, "a\n", o, &fakeExec{})
		if code := ts.run(); code != ExitOK {
			t.Fatalf("run = exit %d\n%s", code, ts.errOut)
		}
		if !strings.Contains(ts.errOut.String(), "pace: job log "+path+": 2 earlier calls still count against the rules\n") {
			t.Errorf("stderr lacks the earlier calls:\n%s", ts.errOut)
		}
		rows := readEntries(t, path)
		if len(rows) != 3 || !rows[2].Start.Equal(now.Add(500*time.Millisecond)) {
			t.Errorf("rows %+v, want the new call admitted 500ms in, when the earlier ones left 2/s's window", rows)
		}
	})
}
