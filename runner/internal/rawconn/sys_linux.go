//go:build linux && !race

package rawconn

import (
	"syscall"
	"unsafe"
)

// sysRead is one read(2) of fd into p (not empty), the scheduler not told.
func sysRead(fd uintptr, p []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), e
}

// sysWrite is one write(2) of p (not empty) to fd, the scheduler not told.
func sysWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), e
}
