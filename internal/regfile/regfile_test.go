package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	f, err := Open(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("Open(new file) error: %v", err)
	}
	if _, err := f.WriteString("a\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	f, err = Open(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("Open(regular file) error: %v", err)
	}
	f.Close()
	if _, err := Open(filepath.Join(dir, "missing"), os.O_RDONLY, 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) error = %v, want os.ErrNotExist", err)
	}
	if _, err := Open(dir, os.O_RDONLY, 0); !errors.Is(err, ErrNotRegular) || err.Error() != dir+" is a directory, not a regular file" {
		t.Errorf("Open(dir) error = %v, want %q", err, dir+" is a directory, not a regular file")
	}
}

// A FIFO is refused at once, whichever way it is opened, and whatever
// the open flags: a plain open would wait for the other end forever.
func TestOpenFIFORefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_APPEND | os.O_CREATE, os.O_RDWR | os.O_CREATE} {
		done := make(chan error, 1)
		go func() {
			f, err := Open(fifo, flag, 0o644)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			want := fifo + " is a FIFO, not a regular file"
			if !errors.Is(err, ErrNotRegular) || err.Error() != want {
				t.Errorf("Open(FIFO, %#o) error = %v, want %q", flag, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Open(FIFO, %#o) still blocked after 10s", flag)
		}
	}
	if _, err := Open("/dev/null", os.O_RDONLY, 0); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Open(/dev/null) error = %v, want ErrNotRegular", err)
	}
}
