package runner

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// DefaultSpillLimit is how much output a Capture keeps in memory before
// it moves it to a temporary file.
const DefaultSpillLimit = 4 << 20

// Capture is an io.Writer that keeps what is written to it so that it can
// be replayed whole later: in memory up to a limit, then in a temporary
// file, so that a job printing gigabytes costs disk, not memory.
//
// A Capture is written by one goroutine and then, once writing is over,
// read; it is not safe for concurrent use. The temporary file is removed
// as soon as it is made, where an open file can be (Unix): it is read
// through its descriptor only, so a pace killed outright (SIGKILL) leaves
// nothing in $TMPDIR; elsewhere Close removes it. The zero value is not
// usable; make one with NewCapture.
type Capture struct {
	limit   int64
	dir     string
	mem     bytes.Buffer
	file    *os.File
	removed bool // file has no name left
	size    int64
	err     error // first error spilling; later writes are dropped
}

// NewCapture returns a Capture that keeps up to limit bytes in memory
// (limit <= 0: DefaultSpillLimit) and spills to a temporary file in dir
// (empty: os.TempDir) past that.
func NewCapture(limit int64, dir string) *Capture {
	if limit <= 0 {
		limit = DefaultSpillLimit
	}
	return &Capture{limit: limit, dir: dir}
}

// Write keeps p. It never fails: if the temporary file cannot be written,
// the rest of the output is dropped and Err says why, so that the job
// writing it is not disturbed.
func (c *Capture) Write(p []byte) (int, error) {
	n := len(p)
	if c.err != nil {
		return n, nil
	}
	if c.file == nil && int64(c.mem.Len()+len(p)) > c.limit {
		if err := c.spill(); err != nil {
			c.err = err
			return n, nil
		}
	}
	if c.file != nil {
		if _, err := c.file.Write(p); err != nil {
			c.err = fmt.Errorf("runner: write output to %s: %w", c.file.Name(), err)
			return n, nil
		}
	} else {
		c.mem.Write(p)
	}
	c.size += int64(n)
	return n, nil
}

// spill moves the output kept in memory to a new temporary file.
func (c *Capture) spill() error {
	// Without a name where it can be (Windows removes no open file): the
	// space is the kernel's to free, when the Capture closes it or the
	// process dies, however it dies.
	f, named, err := TempFile(c.dir, "pace-output-*")
	if err != nil {
		return fmt.Errorf("runner: spill output: %w", err)
	}
	removed := !named
	if _, err := f.Write(c.mem.Bytes()); err != nil {
		f.Close()
		if !removed {
			os.Remove(f.Name())
		}
		return fmt.Errorf("runner: spill output to %s: %w", f.Name(), err)
	}
	c.mem = bytes.Buffer{}
	c.file = f
	c.removed = removed
	return nil
}

// Len returns the number of bytes kept.
func (c *Capture) Len() int64 {
	if c == nil {
		return 0
	}
	return c.size
}

// Spilled reports whether the output went to a temporary file.
func (c *Capture) Spilled() bool { return c != nil && c.file != nil }

// Err returns the error that made the Capture drop output, or nil.
func (c *Capture) Err() error {
	if c == nil {
		return nil
	}
	return c.err
}

// WriteTo writes everything kept to w, from the start. It may be called
// more than once.
func (c *Capture) WriteTo(w io.Writer) (int64, error) {
	if c == nil {
		return 0, nil
	}
	if c.file == nil {
		n, err := w.Write(c.mem.Bytes())
		return int64(n), err
	}
	r := io.NewSectionReader(c.file, 0, c.size)
	return io.Copy(w, r)
}

// Bytes returns the output kept, reading it back from the temporary file
// if it spilled. Meant for small outputs and tests.
func (c *Capture) Bytes() []byte {
	switch {
	case c == nil:
		return nil // no allocation for the nil Capture of a job without output
	case c.file == nil:
		return bytes.Clone(c.mem.Bytes())
	}
	var b bytes.Buffer
	c.WriteTo(&b)
	return b.Bytes()
}

// Close drops the output and removes the temporary file, if any. It is
// safe to call on a nil Capture and more than once.
func (c *Capture) Close() error {
	if c == nil {
		return nil
	}
	c.mem = bytes.Buffer{}
	if c.file == nil {
		return nil
	}
	err := c.file.Close()
	if !c.removed {
		err = errors.Join(err, os.Remove(c.file.Name()))
	}
	c.file = nil
	if err != nil {
		return fmt.Errorf("runner: remove output file: %w", err)
	}
	return nil
}
