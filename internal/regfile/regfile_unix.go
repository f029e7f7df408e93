//go:build unix

package regfile

import (
	"os"
	"syscall"
)

// nonblock makes open(2) return at once on a FIFO instead of waiting for
// its other end.
const nonblock = syscall.O_NONBLOCK

// clearNonblock puts f, a regular file, back in blocking mode.
func clearNonblock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}
