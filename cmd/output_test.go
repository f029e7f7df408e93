package cmd

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestOutputBrokenPipe(t *testing.T) {
	var w strings.Builder
	fail := error(nil)
	broken := 0
	o := &output{w: writerFunc(func(p []byte) (int, error) {
		if fail != nil {
			return 0, fail
		}
		return w.Write(p)
	}), broken: func() { broken++ }}

	if n, err := o.Write([]byte("a\n")); n != 2 || err != nil || o.closed() {
		t.Fatalf("Write = %d, %v (closed %v); want 2, nil, open", n, err, o.closed())
	}
	// Any other failure is the caller's, as it is.
	fail = errors.New("no space left on device")
	if _, err := o.Write([]byte("b\n")); err != fail || o.closed() || broken != 0 {
		t.Errorf("Write on a full disk = %v (closed %v, broken %d); want the error as it is, still open", err, o.closed(), broken)
	}
	// The reader went away: reported once, and every later write is
	// dropped without touching stdout.
	fail = &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
	for i := range 3 {
		if _, err := o.Write([]byte("c\n")); !errors.Is(err, errStdoutGone) {
			t.Errorf("write %d after EPIPE = %v, want errStdoutGone", i, err)
		}
	}
	if broken != 1 || !o.closed() {
		t.Errorf("after EPIPE: broken called %d times, closed %v; want once, closed", broken, o.closed())
	}
	fail = nil
	o.Write([]byte("d\n"))
	if w.String() != "a\n" {
		t.Errorf("stdout = %q, want only what came before the failures", w.String())
	}
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
