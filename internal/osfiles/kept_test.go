package osfiles

import (
	"errors"
	"testing"
)

type failAfter struct {
	n    int
	sent int
}

var errFull = errors.New("no space left on device")

func (f *failAfter) Write(b []byte) (int, error) {
	if f.n == 0 {
		return 0, errFull
	}
	f.n--
	f.sent++
	return len(b), nil
}

// TestKeptErr: the first error is kept, and nothing is written after it
// (a later write that would succeed does not hide it).
func TestKeptErr(t *testing.T) {
	w := &failAfter{n: 1}
	k := &KeptErr{W: w}
	if _, err := k.Write([]byte("a")); err != nil || k.Err != nil {
		t.Fatalf("first write = %v, kept %v; want no error", err, k.Err)
	}
	if _, err := k.Write([]byte("b")); !errors.Is(err, errFull) || !errors.Is(k.Err, errFull) {
		t.Fatalf("second write = %v, kept %v; want %v", err, k.Err, errFull)
	}
	w.n = 5
	if _, err := k.Write([]byte("c")); !errors.Is(err, errFull) || w.sent != 1 {
		t.Errorf("write after the error = %v, %d writes reached W; want %v and 1", err, w.sent, errFull)
	}
}
