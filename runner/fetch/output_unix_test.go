//go:build unix && !solaris && !aix

package fetch

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestFetchOutputDirSweepsLeftovers: the first body written into a
// directory removes the temporary files that a pace killed while writing
// there left behind (their writer gone: no one holds their lock), and
// never one that a living pace is writing (it holds its lock).
func TestFetchOutputDirSweepsLeftovers(t *testing.T) {
	srv := serve(t, &reqRecorder{})
	dir := t.TempDir()
	dead := filepath.Join(dir, ".7.pace-0a1b2c3d.part")
	live := filepath.Join(dir, ".8.pace-4e5f6g7h.part")
	for _, p := range []string{dead, live} {
		if err := os.WriteFile(p, []byte("half a body"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	e := newFetch(t, Options{OutputDir: dir})
	if res := fetchSeq(t, t.Context(), e, srv.URL+"/x", 1); !res.OK() {
		t.Fatalf("Execute: %s", res.Status())
	}
	want := []string{filepath.Base(live), "1"}
	if got := listTree(t, dir); !slices.Equal(got, want) {
		t.Errorf("directory holds %q, want %q: the dead writer's file gone, the living one's kept", got, want)
	}
}
