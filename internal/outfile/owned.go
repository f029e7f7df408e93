package outfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Owned is a file that says something only for as long as its writer
// runs, such as the URL pace proxy listens on (--port-file): WriteOwned
// writes it as WriteFile does, and Remove takes it away again, unless
// someone else has replaced or rewritten it since. A nil *Owned owns
// nothing. Remove is safe for concurrent use; only its first call acts.
//
// Nothing removes the file of a writer killed by SIGKILL: it stays until
// a later writer replaces it, atomically, or someone removes it.
type Owned struct {
	path string      // the file written, links followed
	fi   fs.FileInfo // its identity once written
	data []byte      // what was written
	once sync.Once
}

// WriteOwned writes data to name as WriteFile does, whole or not at all,
// and returns the file written, for Remove. Onto a character device or a
// FIFO, which keep nothing, it returns a nil *Owned.
func WriteOwned(ctx context.Context, name string, data []byte) (*Owned, error) {
	f, err := Create(ctx, name)
	if err != nil {
		return nil, err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return nil, err
	}
	var fi fs.FileInfo
	if f.tmp != nil {
		// The temporary file's identity is the file's once it is
		// renamed (or linked) at its path: taken from the descriptor,
		// not from the path, where another writer may be quicker.
		if fi, err = f.f.Stat(); err != nil {
			return nil, f.named("stat", err)
		}
	}
	if err := f.Commit(); err != nil {
		return nil, err
	}
	if fi == nil {
		return nil, nil
	}
	return &Owned{path: f.dest, fi: fi, data: bytes.Clone(data)}, nil
}

// Remove removes the file WriteOwned wrote if it is still there, the same
// file holding the same bytes, and reports whether it did. A file that
// another writer renamed over it, or that was rewritten in place, is left
// alone, and so is a path where nothing is. Where the path named a link,
// the link stays and the file it led to is removed.
//
// The file is first renamed to a temporary name in its directory, and
// removed only if what was taken is this writer's: a file that another
// writer put at the path between the look and the rename is put back
// (hard-linked, so that a newer one still is not replaced).
func (o *Owned) Remove() (removed bool, err error) {
	if o == nil {
		return false, nil
	}
	o.once.Do(func() { removed, err = o.remove() })
	return removed, err
}

// remove is Remove's single run: a look, and take if the look says mine.
func (o *Owned) remove() (bool, error) {
	if !o.isMine(o.path) {
		return false, nil
	}
	return o.take()
}

// take renames the file at the path away and removes it if it is this
// writer's, else puts it back: another writer's may have come since
// remove looked.
func (o *Owned) take() (bool, error) {
	dir, base := filepath.Split(o.path)
	taken := tempName(dir, base)
	if err := os.Rename(o.path, taken); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // removed by someone else meanwhile
		}
		return false, fmt.Errorf("cannot remove %s: %w", o.path, unwrapPath(err))
	}
	if o.isMine(taken) {
		if err := os.Remove(taken); err != nil {
			return false, fmt.Errorf("cannot remove %s (renamed %s): %w", o.path, filepath.Base(taken), unwrapPath(err))
		}
		return true, nil
	}
	// Another writer's, come in between: back where it was, unless a
	// newer file is there already, which would have replaced it anyway.
	err := os.Link(taken, o.path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		os.Remove(taken)
		return false, nil
	}
	if err := os.Rename(taken, o.path); err != nil {
		return false, fmt.Errorf("cannot put back %s (renamed %s, not this writer's): %w", o.path, filepath.Base(taken), unwrapPath(err))
	}
	return false, nil
}

// isMine reports whether path is the file WriteOwned wrote, not a link
// to it, and holds what it wrote.
func (o *Owned) isMine(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !os.SameFile(fi, o.fi) || fi.Size() != int64(len(o.data)) {
		return false
	}
	b, err := os.ReadFile(path)
	return err == nil && bytes.Equal(b, o.data)
}
