package outfile

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entries returns the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range des {
		names = append(names, d.Name())
	}
	return names
}

// readFile returns name's content.
func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteFileNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.svg")
	if err := WriteFile(t.Context(), p, []byte("new")); err != nil {
		t.Fatalf("WriteFile(%s) = %v", p, err)
	}
	if got := readFile(t, p); got != "new" {
		t.Errorf("content = %q, want %q", got, "new")
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("directory holds %q, want only out.svg", got)
	}
}

func TestWriteFileReplacesRegularKeepingMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.json")
	if err := os.WriteFile(p, []byte("old content"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(t.Context(), p, []byte("new")); err != nil {
		t.Fatalf("WriteFile = %v", err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want a regular file with 0600", fi.Mode())
	}
	if got := readFile(t, p); got != "new" {
		t.Errorf("content = %q, want %q", got, "new")
	}
}

func TestWriteFileFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "runs"), 0o777); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "runs", "5.svg")
	if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "latest.svg")
	if err := os.Symlink("runs/5.svg", link); err != nil {
		t.Fatal(err)
	}
	// A link to a link, relative to the directory of each.
	link2 := filepath.Join(dir, "runs", "l2")
	if err := os.Symlink("../latest.svg", link2); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, link2} {
		if err := WriteFile(t.Context(), p, []byte("via "+filepath.Base(p))); err != nil {
			t.Fatalf("WriteFile(%s) = %v", p, err)
		}
		if got, want := readFile(t, real), "via "+filepath.Base(p); got != want {
			t.Errorf("target holds %q, want %q", got, want)
		}
	}
	for _, p := range []string{link, link2} {
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s: mode %v, %v: want it still a symbolic link", p, fi.Mode(), err)
		}
	}
}

func TestWriteFileDanglingSymlinkCreatesTarget(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink("made", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(t.Context(), link, []byte("x")); err != nil {
		t.Fatalf("WriteFile = %v", err)
	}
	if got := readFile(t, filepath.Join(dir, "made")); got != "x" {
		t.Errorf("target holds %q, want %q", got, "x")
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("link replaced: mode %v, %v", fi.Mode(), err)
	}
}

func TestSymlinkLoopRefused(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.Symlink("b", a)
	os.Symlink("a", b)
	if err := WriteFile(t.Context(), a, []byte("x")); err == nil || !strings.Contains(err.Error(), "too many levels") {
		t.Errorf("WriteFile(loop) = %v, want too many levels of symbolic links", err)
	}
}

func TestRefused(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o777); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"directory", sub, "is a directory"},
		{"missing directory", filepath.Join(dir, "nope", "s.json"), "cannot create a file in"},
	}
	sock := filepath.Join(dir, "s")
	if l, err := net.Listen("unix", sock); err == nil {
		defer l.Close()
		tests = append(tests, struct{ name, path, want string }{"socket", sock, "a socket"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Check(tt.path); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check(%s) = %v, want an error saying %q", tt.path, err, tt.want)
			}
			if err := WriteFile(t.Context(), tt.path, []byte("x")); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("WriteFile(%s) = %v, want an error saying %q", tt.path, err, tt.want)
			}
			if got := entries(t, sub); len(got) != 0 {
				t.Errorf("left %q in the directory", got)
			}
		})
	}
	if got := entries(t, dir); len(got) != 1+len(tests)-2 {
		t.Errorf("left %q behind", got)
	}
}

func TestCheckLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.json")
	if err := Check(p); err != nil {
		t.Fatalf("Check(%s) = %v", p, err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("Check left %q", got)
	}
}

func TestAbortLeavesPathAlone(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "body")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half"))
	f.Abort()
	f.Abort()
	if got := readFile(t, p); got != "old" {
		t.Errorf("content = %q after Abort, want %q", got, "old")
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("directory holds %q after Abort, want only body", got)
	}
	if err := f.Commit(); err == nil {
		t.Error("Commit after Abort = nil, want an error")
	}
}

// TestDevNullStaysDevice writes to /dev/null, directly and through a
// link: it discards, and stays a character device.
func TestDevNullStaysDevice(t *testing.T) {
	if _, err := os.Stat(os.DevNull); err != nil || os.DevNull != "/dev/null" {
		t.Skip("no /dev/null here")
	}
	link := filepath.Join(t.TempDir(), "null")
	if err := os.Symlink(os.DevNull, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{os.DevNull, link} {
		if err := Check(p); err != nil {
			t.Errorf("Check(%s) = %v", p, err)
		}
		if err := WriteFile(t.Context(), p, []byte("discarded")); err != nil {
			t.Errorf("WriteFile(%s) = %v", p, err)
		}
	}
	fi, err := os.Lstat(os.DevNull)
	if err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null: mode %v, %v: want a character device", fi.Mode(), err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("link replaced: mode %v, %v", fi.Mode(), err)
	}
}

func TestCreateCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A regular path does not wait on anything: ctx does not matter.
	p := filepath.Join(t.TempDir(), "f")
	if err := WriteFile(ctx, p, []byte("x")); err != nil {
		t.Errorf("WriteFile(cancelled ctx, regular) = %v", err)
	}
}
