//go:build unix

package osfiles

import (
	"os"
	"syscall"
)

// ReopenedNull reports whether descriptor fd is the null device opened
// read-write. The Go runtime opens the null device, read-write, on a
// standard descriptor that was closed when the process started (so that
// no later file takes its place); a shell sends output to /dev/null
// write-only. So a standard descriptor for which it is true was closed.
func ReopenedNull(fd int) bool {
	var st, null syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || syscall.Stat(os.DevNull, &null) != nil {
		return false
	}
	if st.Rdev != null.Rdev || st.Ino != null.Ino || st.Dev != null.Dev {
		return false
	}
	flags, err := fcntlGetfl(fd)
	return err == nil && flags&syscall.O_ACCMODE == syscall.O_RDWR
}

// fcntlGetfl returns the file status flags of descriptor fd.
func fcntlGetfl(fd int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
