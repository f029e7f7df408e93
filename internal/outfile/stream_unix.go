//go:build unix

package outfile

import (
	"context"
	"fmt"
	"os"
	"syscall"
)

// openStream opens a character device or a FIFO for writing. Opening a
// FIFO blocks until a reader opens it; when ctx is done first, pace opens
// the FIFO for reading itself (which never blocks with O_NONBLOCK), so
// that the blocked open returns, and closes both.
func openStream(ctx context.Context, name string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.OpenFile(name, os.O_WRONLY, 0)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
	}
	if r, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
		o := <-ch
		if o.f != nil {
			o.f.Close()
		}
		r.Close()
	}
	return nil, fmt.Errorf("%s: no reader opened the FIFO (%w)", name, context.Cause(ctx))
}
