package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/regfile"
)

// openFileArg opens the file a command reads whole (pace audit's and pace
// plot's argument): stdin for "" or "-". It returns the reader, the name
// to show in messages, and what closes it. A named file must be a regular
// file: a FIFO is refused at once rather than waited on in open(2), where
// no signal reaches pace (a pipe goes on stdin instead).
func openFileArg(name string, stdin io.Reader) (io.Reader, string, func() error, error) {
	if name == "" || name == "-" {
		return stdin, "stdin", func() error { return nil }, nil
	}
	f, err := regfile.Open(name, os.O_RDONLY, 0)
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, name, nil, fmt.Errorf("%w: give a regular file, or the input on stdin (-)", err)
	}
	if err != nil {
		return nil, name, nil, err
	}
	return f, name, f.Close, nil
}

// unread makes sig the next signal f.Signals delivers, before later ones.
// Not safe for concurrent use with readers of f.Signals.
func (f *Factory) unread(sig os.Signal) {
	rest, ch := f.Signals, make(chan os.Signal, cap(f.Signals)+1)
	ch <- sig
	go func() {
		for s := range rest {
			ch <- s
		}
	}()
	f.Signals = ch
}

// openUntilInterrupt runs open, which prepares a run's input before the
// run handles interrupts and may block there (items.OpenUntil), and gives
// up at the first SIGINT or SIGTERM: nothing has run. The signal waited
// until the input ended: for ever with a FIFO no process opened. A signal
// that comes as the input opens is the run's.
func openUntilInterrupt(f *Factory, open func() (*items.Input, error)) (*items.Input, error) {
	if f == nil || f.Signals == nil {
		return open()
	}
	in, sig, stopped, err := items.OpenUntil(f.Signals, open)
	if stopped {
		return nil, stoppedBeforeRun(f.IOStreams, sig)
	}
	if sig != nil {
		f.unread(sig)
	}
	return in, err
}
