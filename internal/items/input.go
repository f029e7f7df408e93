package items

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pace-cli/pace/internal/osfiles"
)

// Input is where a run's items come from: R, read once, and Name for
// messages. A regular file's items (-a FILE, or stdin redirected from
// one) and those of ::: sources can also be counted while they run, for
// the progress's total (Count).
type Input struct {
	R    io.Reader
	Name string
	// Sources marks the items of several ::: sources (see Product):
	// NUL-separated, to read with ReadOptions.Sources.
	Sources bool

	close func() error
	// counter, if set, reads the input again from the start through an
	// independent handle; offset is where the items start in it.
	counter      io.ReaderAt
	offset, size int64
	known        int64 // how many items of ::: sources
}

// NewInput returns the input of the items r holds, named name; it cannot
// be counted, and Close does nothing.
func NewInput(r io.Reader, name string) *Input { return &Input{R: r, Name: name} }

// Open opens -a FILE, or stdin for "-" or "". Errors name the file; they
// are input errors found before anything runs.
func Open(name string, stdin io.Reader) (*Input, error) {
	if name == "-" || name == "" {
		if err := checkStdin(stdin); err != nil {
			return nil, err
		}
		in := NewInput(stdin, "stdin")
		if f, ok := stdin.(*os.File); ok {
			in.setCounter(f)
		}
		return in, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open input: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open input: %w", err)
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("open input: %s is a directory", name)
	}
	in := &Input{R: f, Name: name, close: f.Close}
	in.setCounter(f)
	return in, nil
}

// errStdinClosed is the error of reading items from a stdin that was
// closed when pace started (pace run ... <&-): read as no items, the run
// would do nothing and succeed.
var errStdinClosed = errors.New("stdin is closed, or is /dev/null opened read-write (as Python's subprocess.DEVNULL opens it): " +
	"give the items on stdin (< FILE, or a pipe), with -a FILE, or after ::: on the command line; for no items, -a /dev/null")

// checkStdin returns errStdinClosed if stdin is a standard descriptor
// that was closed when the process started: the Go runtime put the null
// device there, read-write (osfiles.ReopenedNull), where a shell's
// < /dev/null is read-only.
func checkStdin(stdin io.Reader) error {
	if f, ok := stdin.(*os.File); ok && f.Fd() <= 2 && osfiles.ReopenedNull(int(f.Fd())) {
		return errStdinClosed
	}
	return nil
}

// setCounter enables counting when f is a regular file.
func (in *Input) setCounter(f *os.File) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return
	}
	in.counter, in.offset, in.size = f, off, st.Size()
}

// Close closes the file Open opened, if any. A nil Input (an open that
// failed) has nothing to close.
func (in *Input) Close() error {
	if in == nil || in.close == nil {
		return nil
	}
	return in.close()
}

// Countable reports whether Count can tell the number of items.
func (in *Input) Countable() bool { return in.counter != nil || in.Sources }

// Count returns the number of items in a regular-file input or of :::
// sources, or -1 if it cannot be known. It reads the file through a
// handle of its own, so R is not disturbed, and stops early when ctx is
// done.
func (in *Input) Count(ctx context.Context, opts ReadOptions) int64 {
	if in.Sources {
		return in.known
	}
	if in.counter == nil {
		return -1
	}
	r := WithContext(ctx, io.NewSectionReader(in.counter, in.offset, in.size-in.offset))
	n, err := Count(r, opts)
	if err != nil {
		return -1
	}
	return n
}
