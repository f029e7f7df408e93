package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStateUnusable: a --state that cannot hold the store (a file where
// the directory should be, a directory this user cannot write) is a
// store failure: exit 3, with one line naming the directory, for pace
// run, pace fetch and pace exec alike.
func TestStateUnusable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{"a file": file, "below a file": filepath.Join(file, "sub")}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		states["read-only"] = ro
	}
	for what, state := range states {
		for _, args := range [][]string{
			{"exec", "--key", "k", "--state", state, "-r", "1/s", "--", "true"},
			{"run", "--key", "k", "--state", state, "-r", "1/s", "--", "true"},
			{"fetch", "--key", "k", "--state", state, "-r", "1/s", "http://127.0.0.1:1/{}"},
		} {
			code, _, stderr := execPace(t, "a\n", args...)
			if code != ExitBackend || strings.Count(stderr, "\n") != 1 ||
				!strings.Contains(stderr, "pace: state directory "+state) || !strings.Contains(stderr, "want a directory this user can write in") {
				t.Errorf("pace %s with --state %s = exit %d, stderr %q; want 3 and one line naming the directory",
					args[0], what, code, stderr)
			}
		}
	}
}
