//go:build unix

package outfile

import (
	"context"
	"errors"
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
