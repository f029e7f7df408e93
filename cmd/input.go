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

// openUntilInterrupt runs open, which prepares a run's input before the
// run's own handling of interrupts has begun, and may block there: opening
// a FIFO waits for its writer (-a FIFO, :::: FIFO), several ::: and ::::
// sources are read whole, and pace fetch -o FILE reads its input to find
// its one item. It runs open on a goroutine of its own and gives up at the
// first interrupt (SIGINT, SIGTERM), returning stoppedBeforeRun: nothing
// has run yet. Ctrl-C was held until the input ended: for ever with a
// FIFO no process opened. The goroutine is left blocked then, as pace
// exits; and what open returns later, an input opened, is closed.
func openUntilInterrupt(f *Factory, open func() (*items.Input, error)) (*items.Input, error) {
	if f == nil || f.Signals == nil {
		return open()
	}
	type opened struct {
		in  *items.Input
		err error
	}
	done := make(chan opened, 1)
	go func() {
		in, err := open()
		done <- opened{in, err}
	}()
	select {
	case o := <-done:
		return o.in, o.err
	case sig := <-f.Signals:
		go func() {
			if o := <-done; o.in != nil {
				o.in.Close()
			}
		}()
		return nil, stoppedBeforeRun(f.IOStreams, sig)
	}
}
