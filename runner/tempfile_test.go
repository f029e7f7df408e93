package runner

import (
	"io"
	"os"
	"runtime"
	"testing"
)

// A temporary file leaves nothing in its directory, even while open, and
// holds what is written to it.
func TestTempFileLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	f, named, err := TempFile(dir, "x-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if named != (runtime.GOOS == "windows") {
		t.Errorf("named = %v on %s", named, runtime.GOOS)
	}
	if ents, _ := os.ReadDir(dir); !named && len(ents) != 0 {
		t.Errorf("%s holds %v while the file is open, want nothing", dir, ents)
	}
	if _, err := f.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 5))
	if err != nil || string(b) != "hello" {
		t.Errorf("read back %q, %v; want hello", b, err)
	}
}

// A directory that cannot hold it is an error, not a file elsewhere.
func TestTempFileMissingDir(t *testing.T) {
	if f, _, err := TempFile(t.TempDir()+"/missing", "x-*"); err == nil {
		f.Close()
		t.Error("Temp in a missing directory succeeded")
	}
}
