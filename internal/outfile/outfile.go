// Package outfile writes the files pace's flags name (pace fetch -o,
// pace plot -o, --summary-file) without ever replacing something that is
// not a regular file.
//
// What is at the path decides how it is written:
//
//   - nothing, or a regular file: atomically. The data goes into a new
//     temporary file in the same directory, which is renamed over the path
//     once complete, so the path holds the old content or the new, never a
//     part. A file that is replaced keeps its permission bits. A process
//     killed while it writes (SIGKILL, a crash) leaves nothing behind
//     where it can (Linux: the temporary file has no name until it is
//     complete), and elsewhere a temporary file that Sweep removes: see
//     Sweep.
//   - a character device or a FIFO (/dev/null, /dev/stdout at a terminal
//     or a pipe, a named pipe): straight into it, as a shell's > would. It
//     stays what it was: -o /dev/null discards.
//   - a symbolic link: followed, and what it leads to is written by these
//     same rules; the link itself is never replaced. A link to nothing
//     creates its target.
//   - a directory, a block device, a socket: refused.
//
// Check says beforehand whether a path can be written, so that a command
// can refuse it before anything runs.
package outfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// maxLinks is how many symbolic links are followed before giving up, as
// the kernel's ELOOP does.
const maxLinks = 40

// kind is how a target is written.
type kind int

const (
	kindNew     kind = iota // nothing there: created atomically
	kindRegular             // a regular file: replaced atomically
	kindStream              // a character device or a FIFO: written straight
)

// target is what a path leads to.
type target struct {
	path string // after following links
	kind kind
	perm fs.FileMode // a regular file's permission bits
}

// resolve follows the links of name and says how what it leads to is
// written, or why it cannot be.
func resolve(name string) (target, error) {
	p := name
	for hops := 0; ; hops++ {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return target{path: p, kind: kindNew}, nil
		}
		if err != nil {
			return target{}, fmt.Errorf("%s: %w", name, unwrapPath(err))
		}
		m := fi.Mode()
		switch {
		case m&fs.ModeSymlink != 0:
			// Where the link leads to a device or a FIFO, it is opened
			// as it is: a link of /proc (/dev/stdout, /dev/fd/N) names
			// a pipe that no path names.
			if fi, err := os.Stat(p); err == nil && isStream(fi.Mode()) {
				return target{path: p, kind: kindStream}, nil
			}
			if hops >= maxLinks {
				return target{}, fmt.Errorf("%s: too many levels of symbolic links", name)
			}
			l, err := os.Readlink(p)
			if err != nil {
				return target{}, fmt.Errorf("%s: %w", name, unwrapPath(err))
			}
			if !filepath.IsAbs(l) {
				dir, err := filepath.EvalSymlinks(filepath.Dir(p))
				if err != nil {
					return target{}, fmt.Errorf("%s: %w", name, unwrapPath(err))
				}
				l = filepath.Join(dir, l)
			}
			p = l
		case m.IsRegular():
			return target{path: p, kind: kindRegular, perm: m.Perm()}, nil
		case m.IsDir():
			return target{}, &dirError{name}
		case isStream(m):
			return target{path: p, kind: kindStream}, nil
		default:
			return target{}, fmt.Errorf("%s is not a regular file, a character device or a FIFO (%s)", name, describe(m))
		}
	}
}

// isStream reports whether m is a character device's or a FIFO's.
func isStream(m fs.FileMode) bool {
	return m&fs.ModeCharDevice != 0 || m&fs.ModeNamedPipe != 0
}

// describe names what a file of mode m is.
func describe(m fs.FileMode) string {
	switch {
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "mode " + m.String()
}

// Check reports whether name can be written, without writing it and
// without leaving anything behind: it refuses what Create would refuse,
// and for a new or regular file makes sure a file can be created in its
// directory (it creates one there and removes it). A character device or
// a FIFO is not opened.
func Check(name string) error {
	t, err := resolve(name)
	if err != nil {
		return err
	}
	if t.kind == kindStream {
		return nil
	}
	f, err := createTemp(filepath.Dir(t.path), filepath.Base(t.path))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return f.remove()
}

// CheckDir reports whether files can be created in dir, as Check does
// for a file there: it creates one and removes it.
func CheckDir(dir string) error {
	f, err := createTemp(dir, "check")
	if err != nil {
		return err
	}
	return f.remove()
}

// File is a file being written by Create: call Commit once everything is
// written, or Abort to give up. It is not safe for concurrent use.
type File struct {
	f    *os.File
	name string // the path as given, for errors
	dest string // the path a temporary file becomes; "" when straight
	kind kind
	perm fs.FileMode
	tmp  *temp // nil when straight
	done bool
}

// Create opens name for writing by the rules of the package comment. ctx
// bounds the wait for a FIFO's reader: opening a FIFO blocks until one
// comes, and cancelling ctx gives up.
func Create(ctx context.Context, name string) (*File, error) {
	t, err := resolve(name)
	if err != nil {
		return nil, err
	}
	if t.kind == kindStream {
		f, err := openStream(ctx, t.path)
		if err != nil {
			return nil, err
		}
		return &File{f: f, name: name}, nil
	}
	tmp, err := createTemp(filepath.Dir(t.path), filepath.Base(t.path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &File{f: tmp.f, name: name, dest: t.path, kind: t.kind, perm: t.perm, tmp: tmp}, nil
}

// Write writes p to the file. An error names the path being written, not
// its temporary file.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	return n, f.named("write", err)
}

// named returns err, an error of op on the file, naming the path as given
// rather than its temporary file.
func (f *File) named(op string, err error) error {
	if err == nil {
		return nil
	}
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		op = pe.Op
	} else if le, ok := errors.AsType[*os.LinkError](err); ok {
		op = le.Op
	}
	return &fs.PathError{Op: op, Path: f.name, Err: unwrapPath(err)}
}

// Commit makes what was written the file's content: a temporary file is
// synced and renamed over the path. On error nothing has changed at the
// path (a device or FIFO may have received part of the data).
func (f *File) Commit() error {
	if f.done {
		return errors.New("outfile: commit after commit or abort")
	}
	f.done = true
	if f.tmp == nil {
		return f.f.Close()
	}
	err := f.named("sync", f.f.Sync())
	if err == nil && f.perm != 0 {
		err = f.named("chmod", f.f.Chmod(f.perm))
	}
	if err == nil {
		err = f.named("rename", f.tmp.commit(f.dest, f.kind == kindNew))
	}
	if err != nil {
		f.tmp.remove()
		return err
	}
	return nil
}

// Abort gives up: a temporary file is removed and the path is left as it
// was. After Commit it does nothing, so it can be deferred.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	if f.tmp == nil {
		f.f.Close()
		return
	}
	f.tmp.remove()
}

// WriteFile writes data to name by the rules of the package comment:
// whole or not at all onto a regular file or a new path.
func WriteFile(ctx context.Context, name string, data []byte) error {
	f, err := Create(ctx, name)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}

// unwrapPath returns the cause of a *fs.PathError or an *os.LinkError,
// whose message would name the temporary file.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	if le, ok := errors.AsType[*os.LinkError](err); ok {
		return le.Err
	}
	return err
}

// dirError says that the path to write is a directory. It is
// syscall.EISDIR, so that a caller can tell it apart from a full disk.
type dirError struct{ name string }

func (e *dirError) Error() string { return e.name + " is a directory, not a file" }
func (e *dirError) Unwrap() error { return syscall.EISDIR }
