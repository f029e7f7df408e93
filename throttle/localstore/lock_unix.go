//go:build unix && !solaris && !aix

package localstore

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Locks are flock(2) locks: whole-file, advisory, held by an open file
// description (so two descriptors of one process exclude each other, as
// two processes do), and released by the kernel when the last descriptor
// closes, including when the process dies.

// tryLock takes a lock on f without waiting and reports whether it got it.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	how := unix.LOCK_SH | unix.LOCK_NB
	if exclusive {
		how = unix.LOCK_EX | unix.LOCK_NB
	}
	for {
		err := unix.Flock(int(f.Fd()), how)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, unix.EINTR):
			continue
		}
		return false, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
}

// lockBlocking waits in the kernel until it takes a lock on f.
func lockBlocking(f *os.File, exclusive bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err := unix.Flock(int(f.Fd()), how)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		return nil
	}
}

// unlock releases the lock f holds.
func unlock(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// unlinked reports whether f's file has been removed from its directory.
func unlinked(f *os.File) bool {
	var st unix.Stat_t
	return unix.Fstat(int(f.Fd()), &st) == nil && st.Nlink == 0
}
