package fetch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"syscall"

	"github.com/pace-cli/pace/runner"
)

// maxStreamBody bounds what pace keeps of a -d @FILE that is a pipe or a
// device: it is held in memory for the whole run.
const maxStreamBody = 256 << 20

// streamBody is the content of a -d @FILE that is not a regular file (a
// pipe such as -d @<(cmd), a FIFO, a device). Such a file can be read only
// once and has no size, so it is read whole by the first request that
// needs it, and every request of the run (retries, redirects, other
// items) sends those same bytes. ready is closed once data or err is set.
type streamBody struct {
	ready chan struct{}
	data  []byte
	err   error
}

// setFileBody makes the content of the file called name req's body: a
// regular file is reopened for each attempt and for redirects that resend
// it; anything else is read whole once (streamBody), ctx bounding the
// wait for its writer.
func (e *Executor) setFileBody(ctx context.Context, req *http.Request, name string) error {
	fi, err := os.Stat(name)
	if err != nil {
		return runner.Permanent(fmt.Errorf("data file: %w", err))
	}
	if !fi.Mode().IsRegular() {
		data, err := e.streamBody(ctx, name, fi.Mode())
		if err != nil {
			return err
		}
		req.ContentLength = int64(len(data))
		req.Body = io.NopCloser(bytes.NewReader(data))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
		if len(data) == 0 {
			req.Body = http.NoBody
		}
		return nil
	}
	open := func() (io.ReadCloser, error) {
		f, err := os.Open(name)
		if err != nil {
			return nil, runner.Permanent(fmt.Errorf("data file: %w", err))
		}
		return f, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return runner.Permanent(fmt.Errorf("data file: %w", err))
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return fmt.Errorf("data file: %w", err)
	}
	req.Body, req.GetBody = f, open
	req.ContentLength = fi.Size()
	if fi.Size() == 0 {
		req.Body = http.NoBody
		f.Close()
	}
	return nil
}

// dataChanged returns err, the failure of req, saying so if req's body
// is a regular file, name, whose size is no longer the one req announced
// (Content-Length): a file that grew or shrank while it was sent, or
// before a redirect sent it again, which net/http reports only as a
// length mismatch. A retry sends the file as it is then.
func dataChanged(req *http.Request, name string, err error) error {
	if name == "" || req.ContentLength <= 0 {
		return err
	}
	fi, serr := os.Stat(name)
	if serr != nil || !fi.Mode().IsRegular() || fi.Size() == req.ContentLength {
		return err
	}
	return fmt.Errorf("data file %s changed while it was sent (%d bytes when the request began, %d now): %w", name, req.ContentLength, fi.Size(), err)
}

// streamBody returns the content of the stream called name, reading it
// on the first call for that name; later calls wait for that read, or for
// ctx. A read cut short (ctx ended, too large, a read error) fails every
// request that needs the stream: what it held is gone.
func (e *Executor) streamBody(ctx context.Context, name string, mode fs.FileMode) ([]byte, error) {
	s := &streamBody{ready: make(chan struct{})}
	if v, loaded := e.streams.LoadOrStore(name, s); loaded {
		s = v.(*streamBody)
		select {
		case <-s.ready:
			return s.data, s.err
		case <-ctx.Done():
			return nil, fmt.Errorf("data file %s: waiting for another request to read it: %w", name, context.Cause(ctx))
		}
	}
	s.data, s.err = readStream(ctx, name, mode)
	if s.err != nil {
		s.err = runner.Permanent(s.err)
	}
	close(s.ready)
	return s.data, s.err
}

// readStream reads the stream called name whole, up to maxStreamBody
// bytes. Opening a FIFO waits for its writer and reading it for its end;
// ctx ends both waits.
func readStream(ctx context.Context, name string, mode fs.FileMode) ([]byte, error) {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(name)
		ch <- opened{f, err}
	}()
	var o opened
	select {
	case o = <-ch:
	case <-ctx.Done():
		if mode&fs.ModeNamedPipe != 0 {
			// Be the writer it waits for, so that the open returns.
			if w, err := os.OpenFile(name, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
		}
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, fmt.Errorf("data file %s: no writer opened it (%w)", name, context.Cause(ctx))
	}
	if o.err != nil {
		return nil, fmt.Errorf("data file: %w", o.err)
	}
	f := o.f
	stop := context.AfterFunc(ctx, func() { f.Close() }) // ends a read that waits
	data, err := io.ReadAll(io.LimitReader(f, maxStreamBody+1))
	if !stop() {
		return nil, fmt.Errorf("data file %s: its writer had not finished (%w)", name, context.Cause(ctx))
	}
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("data file: %w", err)
	}
	if len(data) > maxStreamBody {
		return nil, fmt.Errorf("data file %s is a pipe or device holding more than %s: write it to a file first", name, formatSize(maxStreamBody))
	}
	return data, nil
}
