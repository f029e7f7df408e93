package cmd

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
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

func TestOutputStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w strings.Builder
		stall := make(chan struct{}) // never closed: a reader that never reads
		stalled := false
		o := &output{w: writerFunc(func(p []byte) (int, error) {
			if stalled {
				<-stall
			}
			return w.Write(p)
		}), broken: func() {}}

		// Before the kill, a write waits for the reader however long it takes.
		if _, err := o.Write([]byte("a\n")); err != nil {
			t.Fatalf("Write = %v, want nil", err)
		}
		stalled = true
		got := make(chan error, 1)
		go func() { _, err := o.Write([]byte("b\n")); got <- err }()
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case err := <-got:
			t.Fatalf("Write to a stalled reader before giveUp = %v, want it to wait", err)
		default:
		}
		// Killed: it gives up within stallPatience, and so does every
		// later write.
		start := time.Now()
		o.giveUp()
		if err := <-got; !errors.Is(err, errStdoutStalled) || time.Since(start) != stallPatience {
			t.Errorf("Write after giveUp = %v after %v, want errStdoutStalled after %v", err, time.Since(start), stallPatience)
		}
		if _, err := o.Write([]byte("c\n")); !errors.Is(err, errStdoutStalled) || !o.stalled.Load() || o.closed() {
			t.Errorf("later Write = %v (given %v, closed %v), want errStdoutStalled, given, not closed", err, o.stalled.Load(), o.closed())
		}
		if w.String() != "a\n" {
			t.Errorf("stdout = %q, want only what came before the stall", w.String())
		}
		close(stall) // let the abandoned write end, for the bubble
	})
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
