package localstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// bbolt creates a store by writing four pages at once (two meta pages, a
// freelist and an empty leaf) to an empty file, then syncing it. That
// write is not atomic: a full disk, or a process killed before or during
// it, leaves a file that is empty, or shorter than four pages and holding
// no meta page past the two of creation (transaction ids 0 and 1). No
// transaction was ever committed to such a file, so it holds no call:
// it is a store not created yet, which the next admission creates over
// (under the transaction lock), not a damaged one that would break its
// quota until someone removed it. Anything else that is short, such as a
// store cut short, is damaged.

// unfinished reports whether the open store file f is a creation that
// did not finish, as above.
func unfinished(f *os.File) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	size := fi.Size()
	if size == 0 {
		return true, nil
	}
	const maxPage = 64 << 10
	b := make([]byte, min(size, 2*maxPage))
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	if len(b) < pageHeader+metaSize || !validMeta(b[pageHeader:pageHeader+metaSize]) {
		return false, nil
	}
	m0 := b[pageHeader : pageHeader+metaSize]
	pageSize := int64(binary.NativeEndian.Uint32(m0[8:]))
	if pageSize < pageHeader+metaSize || pageSize > maxPage || size >= 4*pageSize || metaTxid(m0) > 1 {
		return false, nil
	}
	if end := pageSize + pageHeader + metaSize; int64(len(b)) >= end {
		if m1 := b[pageSize+pageHeader : end]; validMeta(m1) && metaTxid(m1) > 1 {
			return false, nil
		}
	}
	return true, nil
}

// checkNew returns an error wrapping fs.ErrNotExist if p has no store
// file yet or one whose creation did not finish (readOnly), or empties
// the latter for bbolt to create the store over it (not readOnly). Only
// a file shorter than four pages of this host, the page size bbolt
// creates stores with, is read: a store that was ever created is
// longer, so that each transaction costs a stat. Anything at the name
// but a regular file gives notAFile's error. It requires the transaction
// lock held.
func (p paths) checkNew(readOnly bool) error {
	fi, err := os.Lstat(p.db)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !readOnly:
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return notAFile(p.db, fi.Mode())
	case fi.Size() >= 4*int64(os.Getpagesize()):
		return nil
	}
	flag := os.O_RDWR
	if readOnly {
		flag = os.O_RDONLY
	}
	f, err := openFile(p.db, flag, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fresh, err := unfinished(f)
	switch {
	case err != nil || !fresh:
		return err
	case readOnly:
		return fmt.Errorf("localstore: quota %q: %s holds no store yet: %w", p.key, p.db, fs.ErrNotExist)
	}
	return f.Truncate(0)
}
