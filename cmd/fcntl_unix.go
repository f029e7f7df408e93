//go:build unix

package cmd

import "syscall"

// fcntlGetfl returns the file status flags of descriptor fd.
func fcntlGetfl(fd int) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
