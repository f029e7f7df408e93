//go:build unix

package cmd

import (
	"fmt"
	"os"
	"syscall"
)

// checkStdio refuses to run with stdout closed (pace ... >&-): job output
// would vanish, and a job printing nothing would not even tell. The Go
// runtime opens the null device, read-write, on a standard descriptor that
// was closed when the process started (so that no later file takes its
// place); a shell sends output to /dev/null write-only. So stdout on the
// null device opened read-write was closed.
func checkStdio() (code int, ok bool) {
	if reopenedNull(1) {
		fmt.Fprintln(os.Stderr, "pace: stdout is closed; to discard job output, send it to /dev/null (> /dev/null)")
		return ExitUsage, false
	}
	return 0, true
}

// reopenedNull reports whether descriptor fd is the null device opened
// read-write, as the Go runtime reopens a closed standard descriptor.
func reopenedNull(fd int) bool {
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
