package runner

import (
	"os"
	"syscall"
)

// oTmpfile is Linux's O_TMPFILE, the same on every architecture Go
// supports (O_DIRECTORY is not, and is the syscall package's).
const oTmpfile = 0o20000000 | syscall.O_DIRECTORY

// openUnnamed opens a new file without a name in dir, or returns nil
// where that cannot be done (a file system or a kernel without
// O_TMPFILE): the caller then makes a named one, which reports an error
// such as a directory it cannot write.
func openUnnamed(dir string) *os.File {
	fd, err := syscall.Open(dir, oTmpfile|syscall.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), dir+string(os.PathSeparator)+"(unnamed)")
}
