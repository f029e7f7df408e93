//go:build windows

package localstore

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// Locks are LockFileEx locks of one byte at the largest offset, as bbolt
// takes on its own file: far past any content, so that a locked slot
// file can still be read (Windows locks are mandatory for the bytes they
// cover). They belong to a handle, so two handles of one process exclude
// each other, and Windows releases them when the handle closes, including
// when the process dies.

func lockRegion() *windows.Overlapped {
	const m1 = 1<<32 - 1
	return &windows.Overlapped{Offset: m1, OffsetHigh: m1}
}

// tryLock takes a lock on f without waiting and reports whether it got it.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, lockRegion())
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return false, nil
	}
	return false, &os.PathError{Op: "LockFileEx", Path: f.Name(), Err: err}
}

// lockBlocking waits until it takes a lock on f.
func lockBlocking(f *os.File, exclusive bool) error {
	var flags uint32
	if exclusive {
		flags = windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	if err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, lockRegion()); err != nil {
		return &os.PathError{Op: "LockFileEx", Path: f.Name(), Err: err}
	}
	return nil
}

// unlock releases the lock f holds.
func unlock(f *os.File) error {
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, lockRegion())
}

// unlinked reports whether f's file has been removed: never, since
// Windows does not remove a file that is open without FILE_SHARE_DELETE,
// and Go opens files without it.
func unlinked(*os.File) bool { return false }
