//go:build linux && race

package rawconn

import "syscall"

// Under the race detector, reads and writes go through package syscall's,
// which tell it what they read, write, and order (a write before the read
// that sees it), as net.Conn's do: tests that rely on that keep working.

func sysRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	return max(n, 0), errno(err)
}

func sysWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), p)
	return max(n, 0), errno(err)
}

func errno(err error) syscall.Errno {
	if e, ok := err.(syscall.Errno); ok {
		return e
	}
	return 0
}
