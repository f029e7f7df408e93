package outfile

import "golang.org/x/sys/unix"

// canOpenUnnamed reports whether dir's file system makes files without a
// name (O_TMPFILE), asked of the kernel, not of openUnnamed.
func canOpenUnnamed(dir string) bool {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}
