//go:build unix

package joblog

import (
	"os"
	"syscall"
)

// lock takes an exclusive advisory lock on f, waiting for other pace
// processes that hold it (for one row each), and returns its release. A
// file system without locks (some network ones) goes unlocked: appends
// are still whole rows, only a torn row's cut-off is less safe.
func lock(f *os.File) (unlock func()) {
	rc, err := f.SyscallConn()
	if err != nil {
		return func() {}
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if ferr = syscall.Flock(int(fd), syscall.LOCK_EX); ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil || ferr != nil {
		return func() {}
	}
	return func() {
		rc.Control(func(fd uintptr) { syscall.Flock(int(fd), syscall.LOCK_UN) })
	}
}
