//go:build unix && !solaris && !aix

package outfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameOpen says that a file may be renamed while it is open: its lock
// is held until it is renamed over its path.
const renameOpen = true

// tryLock takes an exclusive flock on f without waiting and reports
// whether it got it; an error is a file system without such locks.
func tryLock(f *os.File) (bool, error) {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, unix.EINTR):
			continue
		}
		return false, err
	}
}
