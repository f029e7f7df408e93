//go:build unix && !solaris && !aix

package outfile

import (
	"errors"
	"os"
	"syscall"
)

// renameOpen says that a file may be renamed while it is open: its lock
// is held until it is renamed over its path.
const renameOpen = true

// tryLock takes an exclusive flock on f without waiting and reports
// whether it got it; an error is a file system without such locks.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, err
	}
}
