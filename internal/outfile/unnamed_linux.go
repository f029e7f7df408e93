package outfile

import (
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

// Linux's flags for a file without a name and for linkat, the same on
// every architecture Go supports (O_DIRECTORY is not, and is the
// syscall package's).
const (
	oTmpfile        = 0o20000000 | syscall.O_DIRECTORY
	atFDCWD         = -100
	atSymlinkFollow = 0x400
)

// openUnnamed opens a new file without a name in dir (O_TMPFILE), locked,
// or returns nil where that cannot be done: a file system or a kernel
// without O_TMPFILE, or no /proc to link the file by (linkUnnamed).
// Whatever the reason, the caller creates a named temporary file instead,
// and that one reports an error such as a full disk or a directory it
// cannot write.
func openUnnamed(dir string) *os.File {
	fd, err := syscall.Open(dir, oTmpfile|syscall.O_RDWR|syscall.O_CLOEXEC, 0o666)
	if err != nil {
		return nil
	}
	if _, err := os.Lstat(procFD(fd)); err != nil {
		syscall.Close(fd)
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
	err := linkat(procFD(int(f.Fd())), name)
	if err != nil {
		return &fs.PathError{Op: "link", Path: name, Err: err}
	}
	return nil
}

// linkat makes newpath a link to what oldpath leads to (AT_SYMLINK_FOLLOW),
// both relative to the working directory.
func linkat(oldpath, newpath string) error {
	o, err := syscall.BytePtrFromString(oldpath)
	if err != nil {
		return err
	}
	n, err := syscall.BytePtrFromString(newpath)
	if err != nil {
		return err
	}
	cwd := atFDCWD
	_, _, errno := syscall.Syscall6(syscall.SYS_LINKAT, uintptr(cwd), uintptr(unsafe.Pointer(o)),
		uintptr(cwd), uintptr(unsafe.Pointer(n)), atSymlinkFollow, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
