package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// When stdout's reader goes away (pace run ... | head -1), pace starts no
// more jobs, kills the running ones and exits 141, instead of dying of
// SIGPIPE and leaving its jobs behind.
func TestBrokenStdoutKillsJobs(t *testing.T) {
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first line
	defer w.Close()

	f, _, _, _, errOut := testFactory("1\n2\n3\n4\n5\n6\n")
	f.IOStreams.Out = w
	script := `if [ "$1" = 1 ]; then echo one; else sleep 30; touch "$2/done$1"; fi`
	opts := &RunOptions{IO: f.IOStreams, Factory: f,
		Command: []string{"sh", "-c", script, "sh", "{}", dir},
		Common:  CommonOptions{Jobs: 3, Progress: progressNever, Summary: summaryText}}
	err = runRun(context.Background(), opts)
	if got := exitCode(err); got != ExitBrokenPipe {
		t.Fatalf("exit %d, want %d; stderr:\n%s", got, ExitBrokenPipe, errOut)
	}
	if done, _ := filepath.Glob(filepath.Join(dir, "done*")); len(done) > 0 {
		t.Errorf("jobs ran to completion after stdout closed: %v", done)
	}
	if !strings.Contains(errOut.String(), "pace: stdout closed: starting no more jobs") {
		t.Errorf("stderr %q does not say why pace stopped", errOut)
	}
	if !strings.Contains(errOut.String(), "interrupted by SIGPIPE") {
		t.Errorf("summary %q does not say the run was cut short", errOut)
	}
}
