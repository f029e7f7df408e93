package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/regfile"
)

// input is where the items come from.
type input struct {
	r    io.Reader
	name string
	// counter, if set, reads the input again from the start through an
	// independent handle: a regular file's items can be counted while
	// they are run, for the progress bar's total.
	counter io.ReaderAt
	offset  int64 // where the items start in counter
	size    int64
	close   func() error
	// product marks the items of several ::: sources: NUL-separated,
	// values separated by productColSep; known is how many there are.
	product bool
	known   int64
}

// countable reports whether count can tell the number of items.
func (in *input) countable() bool { return in.counter != nil || in.product }

// openInput opens -a FILE, or stdin for "-" or "". Errors name the file;
// they are input errors found before anything runs.
func openInput(name string, stdin io.Reader) (*input, error) {
	if name == "-" || name == "" {
		in := &input{r: stdin, name: "stdin", close: func() error { return nil }}
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
	in := &input{r: f, name: name, close: f.Close}
	in.setCounter(f)
	return in, nil
}

// setCounter enables counting when f is a regular file.
func (in *input) setCounter(f *os.File) {
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

// count returns the number of items in a regular-file input or of :::
// sources, or -1 if it cannot be known. It stops early when ctx is done.
func (in *input) count(ctx context.Context, opts items.ReadOptions) int64 {
	if in.product {
		return in.known
	}
	if in.counter == nil {
		return -1
	}
	r := &ctxReader{ctx: ctx, r: io.NewSectionReader(in.counter, in.offset, in.size-in.offset)}
	n, err := items.Count(r, opts)
	if err != nil {
		return -1
	}
	return n
}

// ctxReader is a reader that fails once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

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
