package outfile

import "syscall"

// canOpenUnnamed reports whether dir's file system makes files without a
// name (O_TMPFILE), asked of the kernel, not of openUnnamed.
func canOpenUnnamed(dir string) bool {
	fd, err := syscall.Open(dir, oTmpfile|syscall.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return false
	}
	syscall.Close(fd)
	return true
}
