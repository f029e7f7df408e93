//go:build linux

package rawconn

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

const supported = true

// maxRW is the most one read or write asks for, as package net's.
const maxRW = 1 << 30

// Read reads up to len(p) bytes, waiting for them as net.Conn's Read
// does (its deadline kept).
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(p) > maxRW {
		p = p[:maxRW]
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait until readable
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes p whole, waiting for room as net.Conn's Write does (its
// deadline kept).
func (c *Conn) Write(p []byte) (int, error) {
	var nn int
	var errno syscall.Errno
	stalled := false
	err := c.rc.Write(func(fd uintptr) bool {
		for nn < len(p) {
			end := min(len(p), nn+maxRW)
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[nn])), uintptr(end-nn))
			switch e {
			case 0:
				if r == 0 {
					stalled = true // no progress: io.ErrUnexpectedEOF, as net says
					return true
				}
				nn += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until writable
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return nn, c.opError("write", err)
	case stalled:
		return nn, c.opError("write", io.ErrUnexpectedEOF)
	case errno != 0:
		return nn, c.opError("write", os.NewSyscallError("write", errno))
	}
	return nn, nil
}
