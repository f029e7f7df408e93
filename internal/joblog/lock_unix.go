//go:build unix

package joblog

import (
	"os"
	"syscall"
)

// lock takes an exclusive advisory lock on f, waiting for other pace
// processes that hold it (for one row each). It reports whether it holds
// the lock: a file system without locks (some network ones) goes
// unlocked, where appends are still whole rows and only a torn row's
// cut-off is less safe.
func lock(f *os.File) bool {
	fd := int(f.Fd()) // a regular file: blocking already
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err == nil
		}
	}
}

// unlock releases the lock that lock took on f.
func unlock(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
