package jobout

import (
	"errors"
	"io"
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
	o := &Output{w: writerFunc(func(p []byte) (int, error) {
		if fail != nil {
			return 0, fail
		}
		return w.Write(p)
	}), broken: func() { broken++ }}

	if n, err := o.Write([]byte("a\n")); n != 2 || err != nil || o.Closed() {
		t.Fatalf("Write = %d, %v (closed %v); want 2, nil, open", n, err, o.Closed())
	}
	// Any other failure is the caller's, as it is.
	fail = errors.New("no space left on device")
	if _, err := o.Write([]byte("b\n")); err != fail || o.Closed() || broken != 0 {
		t.Errorf("Write on a full disk = %v (closed %v, broken %d); want the error as it is, still open", err, o.Closed(), broken)
	}
	// The reader went away: reported once, and every later write is
	// dropped without touching stdout.
	fail = &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
	for i := range 3 {
		if _, err := o.Write([]byte("c\n")); !errors.Is(err, ErrGone) {
			t.Errorf("write %d after EPIPE = %v, want ErrGone", i, err)
		}
	}
	if broken != 1 || !o.Closed() {
		t.Errorf("after EPIPE: broken called %d times, closed %v; want once, closed", broken, o.Closed())
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
		o := &Output{w: writerFunc(func(p []byte) (int, error) {
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
		// Killed: it gives up within StallPatience, and so does every
		// later write.
		start := time.Now()
		o.GiveUp()
		if err := <-got; !errors.Is(err, ErrStalled) || time.Since(start) != StallPatience {
			t.Errorf("Write after giveUp = %v after %v, want ErrStalled after %v", err, time.Since(start), StallPatience)
		}
		if _, err := o.Write([]byte("c\n")); !errors.Is(err, ErrStalled) || !o.stalled.Load() || o.Closed() {
			t.Errorf("later Write = %v (given %v, closed %v), want ErrStalled, given, not closed", err, o.stalled.Load(), o.Closed())
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

// TestOutputCut checks that a piece of output cut off leaves stdout, a
// regular file, as it was before the piece, and the next piece after the
// last whole one; and that bytes of another writer are never cut.
func TestOutputCut(t *testing.T) {
	for _, flag := range []int{os.O_TRUNC, os.O_APPEND} {
		name := map[int]string{os.O_TRUNC: ">", os.O_APPEND: ">>"}[flag]
		path := t.TempDir() + "/out"
		os.WriteFile(path, []byte("before\n"), 0o644)
		f, err := os.OpenFile(path, os.O_WRONLY|flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if flag == os.O_TRUNC {
			f.WriteString("before\n")
		}
		o := New(f, func() {}, nil)
		o.Begin()
		o.Write([]byte("a\n"))
		o.Begin()
		o.Write([]byte("b\nto"))
		if err := o.Cut(); err != nil {
			t.Fatalf("%s: cut() = %v, want nil", name, err)
		}
		o.Begin()
		o.Write([]byte("c\n"))
		if got, _ := os.ReadFile(path); string(got) != "before\na\nc\n" {
			t.Errorf("%s: stdout = %q after a cut piece, want %q", name, got, "before\na\nc\n")
		}

		// Another writer appended after the piece: its bytes stay.
		o.Begin()
		o.Write([]byte("d\nto"))
		other, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		other.WriteString("other\n")
		other.Close()
		if err := o.Cut(); err == nil {
			t.Errorf("%s: cut() after another writer = nil, want an error", name)
		}
		if got, _ := os.ReadFile(path); string(got) != "before\na\nc\nd\ntoother\n" {
			t.Errorf("%s: stdout = %q, want the other writer's bytes kept", name, got)
		}
	}
}

// A piece starts where the file ends at its first write, not at Begin:
// under >>, another writer that appended in between keeps its bytes and
// the piece is still cut whole. (A piece that writes nothing, as each of
// pace proxy's requests, so costs no fstat.)
func TestOutputCutStartsAtTheFirstWrite(t *testing.T) {
	path := t.TempDir() + "/out"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := New(f, func() {}, nil)
	o.Begin()
	other, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	other.WriteString("other\n")
	other.Close()
	o.Write([]byte("mine, torn"))
	if err := o.Cut(); err != nil {
		t.Fatalf("cut() = %v, want nil: the piece began after the other writer's bytes", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "other\n" {
		t.Errorf("stdout = %q, want %q", got, "other\n")
	}
}

// TestOutputCutPipe checks that on a pipe what was written stays, and
// cut says nothing.
func TestOutputCutPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o := New(w, func() {}, nil)
	o.Begin()
	o.Write([]byte("a\nb"))
	if err := o.Cut(); err != nil {
		t.Errorf("cut() on a pipe = %v, want nil", err)
	}
	w.Close()
	if got, _ := io.ReadAll(r); string(got) != "a\nb" {
		t.Errorf("pipe got %q, want %q", got, "a\nb")
	}
}

// TestOutputCutStalled checks that a piece a write of which was given up
// on is not cut: the goroutine left in the write may still write, so what
// it wrote is not known, and only what writes returned counts as written.
func TestOutputCutStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := t.TempDir() + "/out"
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		stall := make(chan struct{})
		stalled := false
		o := New(f, func() {}, nil)
		o.w = writerFunc(func(p []byte) (int, error) {
			if stalled {
				f.Write(p[:2]) // part of it lands, then the write blocks
				<-stall
				return 2, nil
			}
			return f.Write(p)
		})
		o.Begin()
		if _, err := o.Write([]byte("a\n")); err != nil {
			t.Fatalf("Write = %v, want nil", err)
		}
		o.Begin()
		stalled = true
		got := make(chan error, 1)
		go func() { _, err := o.Write([]byte("b\nc\n")); got <- err }()
		synctest.Wait()
		o.GiveUp()
		if err := <-got; !errors.Is(err, ErrStalled) {
			t.Fatalf("Write after giveUp = %v, want ErrStalled", err)
		}
		if err := o.Cut(); err == nil {
			t.Errorf("cut() after a write given up on = nil, want why its part stays")
		}
		if got, _ := os.ReadFile(path); string(got) != "a\nb\n" {
			t.Errorf("stdout = %q, want %q: nothing cut", got, "a\nb\n")
		}
		// The next piece writes nothing, and its cut cuts nothing.
		o.Begin()
		if _, err := o.Write([]byte("d\n")); !errors.Is(err, ErrStalled) {
			t.Errorf("later Write = %v, want ErrStalled", err)
		}
		if err := o.Cut(); err != nil {
			t.Errorf("cut() of a piece of which nothing was written = %v, want nil", err)
		}
		close(stall) // let the abandoned write end, for the bubble
	})
}
