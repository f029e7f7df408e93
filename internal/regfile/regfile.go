// Package regfile opens named files that must be regular files without
// ever blocking in open(2): a FIFO, a device, a socket or a directory at
// the path is refused at once with a *NotRegularError, where a plain open
// of a FIFO would wait, beyond SIGINT and SIGTERM, for a process to open
// its other end.
package regfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by every *NotRegularError.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError reports a path that names something other than a
// regular file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode // the type bits of what is there
}

// Error says what the path names: "f is a FIFO, not a regular file".
func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, kind(e.Mode))
}

// Unwrap returns ErrNotRegular.
func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// kind names a file type for a message.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}

// Open opens name as os.OpenFile does (symbolic links are followed, and
// O_CREATE makes a new regular file), and returns the file only when it
// is a regular file; anything else is a *NotRegularError. The type is
// checked before the open and again on the open descriptor, and the open
// itself never waits (it is made with O_NONBLOCK, cleared afterwards), so
// a FIFO swapped in between is refused too.
func Open(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if fi, err := os.Stat(name); err == nil && !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: name, Mode: fi.Mode().Type()}
	}
	f, err := os.OpenFile(name, flag|nonblock, perm)
	if err != nil {
		if fi, serr := os.Stat(name); serr == nil && !fi.Mode().IsRegular() {
			// ENXIO from a FIFO without a reader, EISDIR, ...
			return nil, &NotRegularError{Path: name, Mode: fi.Mode().Type()}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: name, Mode: fi.Mode().Type()}
	}
	if err := clearNonblock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	return f, nil
}
