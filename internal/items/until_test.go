package items

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestOpenUntil: an open that returns gives its input; a signal while it
// blocks stops the wait at once, and the input it opens later is closed.
func TestOpenUntil(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	in, sig, stopped, err := OpenUntil(sigs, func() (*Input, error) { return NewInput(strings.NewReader("a\n"), "x"), nil })
	if in == nil || sig != nil || stopped || err != nil {
		t.Errorf("OpenUntil(an open that returns) = %v, %v, %v, %v; want the input", in, sig, stopped, err)
	}

	release, closed := make(chan struct{}), make(chan struct{})
	sigs <- os.Interrupt
	in, sig, stopped, err = OpenUntil(sigs, func() (*Input, error) {
		<-release // a FIFO's open, waiting for its writer
		return &Input{R: strings.NewReader(""), Name: "fifo", close: func() error { close(closed); return nil }}, nil
	})
	if in != nil || sig != os.Interrupt || !stopped || err != nil {
		t.Errorf("OpenUntil(SIGINT while open blocks) = %v, %v, %v, %v; want stopped by SIGINT", in, sig, stopped, err)
	}
	close(release)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Error("the input opened after the signal was never closed")
	}
}
