package outfile

import (
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed opens a new file without a name in dir (O_TMPFILE), locked,
// or returns nil where that cannot be done: a file system or a kernel
// without O_TMPFILE, or no /proc to link the file by (linkUnnamed).
// Whatever the reason, the caller creates a named temporary file instead,
// and that one reports an error such as a full disk or a directory it
// cannot write.
func openUnnamed(dir string) *os.File {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return nil
	}
	if _, err := os.Lstat(procFD(fd)); err != nil {
		unix.Close(fd)
		return nil
	}
	f := os.NewFile(uintptr(fd), dir)
	// Locked before it has a name, so that no Sweep ever sees it
	// unlocked; a file system without locks leaves it unlocked.
	tryLock(f)
	return f
}

// procFD returns the path of /proc that names descriptor fd.
func procFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// linkUnnamed gives f, opened by openUnnamed, the name name: an error
// that is fs.ErrExist when something is at name.
func linkUnnamed(f *os.File, name string) error {
	// linkat with AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; the link of
	// /proc, followed, needs nothing.
	err := unix.Linkat(unix.AT_FDCWD, procFD(int(f.Fd())), unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW)
	if err != nil {
		return &fs.PathError{Op: "link", Path: name, Err: err}
	}
	return nil
}
