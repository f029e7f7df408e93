//go:build unix

package outfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return p
}

func TestFIFOWrittenStraight(t *testing.T) {
	p := mkfifo(t)
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	if err := Check(p); err != nil {
		t.Errorf("Check(fifo) = %v", err)
	}
	if err := WriteFile(t.Context(), p, []byte("through the pipe")); err != nil {
		t.Fatalf("WriteFile(fifo) = %v", err)
	}
	if g := <-got; g != "through the pipe" {
		t.Errorf("reader got %q, want %q", g, "through the pipe")
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("after the write: mode %v, %v: want a FIFO", fi.Mode(), err)
	}
	if got := entries(t, filepath.Dir(p)); len(got) != 1 {
		t.Errorf("directory holds %q, want only the FIFO", got)
	}
}

// TestFIFOWithoutReaderGivesUp: opening a FIFO nobody reads blocks; a
// cancelled context ends the wait.
func TestFIFOWithoutReaderGivesUp(t *testing.T) {
	p := mkfifo(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Create(ctx, p); !errors.Is(err, context.Canceled) {
		t.Errorf("Create(fifo, cancelled) = %v, want context.Canceled", err)
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("mode %v, %v: want a FIFO", fi.Mode(), err)
	}
}

// TestCharDeviceStaysDevice writes to a null device made with mknod,
// which needs root.
func TestCharDeviceStaysDevice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mknod needs root: not root, so this test does not run")
	}
	p := filepath.Join(t.TempDir(), "null")
	// Major 1, minor 3 is the null device on Linux.
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("mknod: %v", err)
	}
	if f, err := os.OpenFile(p, os.O_WRONLY, 0); err != nil {
		t.Skipf("cannot open a device here (a nodev mount?): %v", err)
	} else {
		f.Close()
	}
	if err := WriteFile(t.Context(), p, []byte("discarded")); err != nil {
		t.Errorf("WriteFile(char device) = %v", err)
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("after the write: mode %v, %v: want a character device", fi.Mode(), err)
	}
}

// TestProcLinkToPipe writes through a link of /proc/self/fd, as
// /dev/stdout is when stdout is a pipe: the link names no path, and the
// pipe gets the data.
func TestProcLinkToPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	proc := fmt.Sprintf("/proc/self/fd/%d", w.Fd())
	if _, err := os.Lstat(proc); err != nil {
		t.Skipf("no %s here: %v", proc, err)
	}
	link := filepath.Join(t.TempDir(), "stdout")
	if err := os.Symlink(proc, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(t.Context(), link, []byte("piped\n")); err != nil {
		t.Fatalf("WriteFile(link to a pipe) = %v", err)
	}
	w.Close()
	if b, _ := io.ReadAll(r); string(b) != "piped\n" {
		t.Errorf("pipe got %q, want %q", b, "piped\n")
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("link replaced: mode %v, %v", fi.Mode(), err)
	}
}
