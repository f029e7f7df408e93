package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pace-cli/pace/internal/items"
)

func TestOpenInput(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "items")
	os.WriteFile(name, []byte("a\nb\n\nc\n"), 0o644)

	in, err := openInput(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	if in.name != name || in.counter == nil {
		t.Errorf("openInput(a file): name %q, counter %v; want the file's name and a counter", in.name, in.counter)
	}
	if n := in.count(context.Background(), items.ReadOptions{}); n != 3 {
		t.Errorf("count = %d, want 3 (empty items are skipped)", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n := in.count(ctx, items.ReadOptions{}); n != -1 {
		t.Errorf("count after cancel = %d, want -1", n)
	}

	for _, stdin := range []string{"-", ""} {
		in, err := openInput(stdin, strings.NewReader("x\n"))
		if err != nil || in.name != "stdin" || in.counter != nil || in.count(context.Background(), items.ReadOptions{}) != -1 {
			t.Errorf("openInput(%q) = %+v, %v; want stdin, not counted", stdin, in, err)
		}
	}
	// stdin redirected from a file is counted too, from where it stands.
	f, _ := os.Open(name)
	defer f.Close()
	f.Seek(2, 0)
	if in, _ := openInput("-", f); in.count(context.Background(), items.ReadOptions{}) != 2 {
		t.Errorf("stdin from a file read past its first item: count = %d, want 2", in.count(context.Background(), items.ReadOptions{}))
	}

	for _, tt := range []struct{ name, want string }{
		{filepath.Join(dir, "missing"), "open input: open " + filepath.Join(dir, "missing") + ": no such file or directory"},
		{dir, "open input: " + dir + " is a directory"},
	} {
		if _, err := openInput(tt.name, nil); err == nil || err.Error() != tt.want {
			t.Errorf("openInput(%s) = %v, want %q", tt.name, err, tt.want)
		}
	}
}
