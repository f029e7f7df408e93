package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pace-cli/pace/internal/interrupt"
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

// openUntilInterrupt runs open, which prepares a run's input before the
// run handles interrupts and may block there (interrupt.Until), and gives
// up at the first SIGINT or SIGTERM: nothing has run, and an input that
// opens after is closed. The signal waited until the input ended: for ever
// with a FIFO no process opened. One that comes as it opens is the run's.
func openUntilInterrupt(f *Factory, open func() (*items.Input, error)) (*items.Input, error) {
	if f == nil || f.Signals == nil {
		return open()
	}
	type opened struct {
		in  *items.Input
		err error
	}
	o, sig, stopped := interrupt.Until(f.Signals, func() opened { in, err := open(); return opened{in, err} },
		func(o opened) { o.in.Close() })
	if stopped {
		return nil, stoppedBeforeRun(f.IOStreams, sig)
	}
	if sig != nil {
		f.Signals = interrupt.Unread(f.Signals, sig)
	}
	return o.in, o.err
}
