package items

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "items")
	os.WriteFile(name, []byte("a\nb\n\nc\n"), 0o644)

	in, err := Open(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if in.Name != name || in.counter == nil {
		t.Errorf("Open(a file): name %q, counter %v; want the file's name and a counter", in.Name, in.counter)
	}
	if n := in.Count(context.Background(), ReadOptions{}); n != 3 {
		t.Errorf("count = %d, want 3 (empty items are skipped)", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n := in.Count(ctx, ReadOptions{}); n != -1 {
		t.Errorf("count after cancel = %d, want -1", n)
	}

	for _, stdin := range []string{"-", ""} {
		in, err := Open(stdin, strings.NewReader("x\n"))
		if err != nil || in.Name != "stdin" || in.counter != nil || in.Count(context.Background(), ReadOptions{}) != -1 {
			t.Errorf("Open(%q) = %+v, %v; want stdin, not counted", stdin, in, err)
		}
	}
	// stdin redirected from a file is counted too, from where it stands.
	f, _ := os.Open(name)
	defer f.Close()
	f.Seek(2, 0)
	if in, _ := Open("-", f); in.Count(context.Background(), ReadOptions{}) != 2 {
		t.Errorf("stdin from a file read past its first item: count = %d, want 2", in.Count(context.Background(), ReadOptions{}))
	}

	for _, tt := range []struct{ name, want string }{
		{filepath.Join(dir, "missing"), "open input: open " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{dir, "open input: " + dir + " is a directory"},
	} {
		in, err := Open(tt.name, nil)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Open(%s) = %v, want %q", tt.name, err, tt.want)
		}
		// What an open that failed after a signal returns is closed all
		// the same (pace run's input, opened until an interrupt).
		if err := in.Close(); err != nil {
			t.Errorf("Close of what Open(%s) returned = %v, want nil: nothing to close", tt.name, err)
		}
	}
}
