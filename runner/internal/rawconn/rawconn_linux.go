//go:build linux

package rawconn

import (
	"io"
	"os"
	"syscall"
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
	c.readMu.Lock()
	defer c.readMu.Unlock()
	c.rp, c.rn, c.rerr, c.rspun = p, 0, 0, false
	readers.Add(1)
	err := c.rc.Read(c.readFn)
	readers.Add(-1)
	n, errno := c.rn, c.rerr
	c.rp = nil
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

// read is Read's callback: false to wait until the socket is readable.
// The first time it finds nothing to read, it may spin (spin_linux.go).
func (c *Conn) read(fd uintptr) bool {
	p := c.rp
	for {
		r, e := sysRead(fd, p)
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			if c.rspun {
				return false
			}
			c.rspun = true
			return c.spin(fd) // false: wait for the poller
		}
		c.rn, c.rerr = r, e
		return true
	}
}

// Write writes p whole, waiting for room as net.Conn's Write does (its
// deadline kept).
func (c *Conn) Write(p []byte) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.wp, c.wn, c.werr, c.wstalled = p, 0, 0, false
	err := c.rc.Write(c.writeFn)
	nn, errno, stalled := c.wn, c.werr, c.wstalled
	c.wp = nil
	switch {
	case err != nil:
		return nn, c.opError("write", err)
	case stalled:
		return nn, c.opError("write", io.ErrUnexpectedEOF) // no progress, as net says
	case errno != 0:
		return nn, c.opError("write", os.NewSyscallError("write", errno))
	}
	return nn, nil
}

// write is Write's callback: false to wait until the socket has room.
func (c *Conn) write(fd uintptr) bool {
	p := c.wp
	for c.wn < len(p) {
		end := min(len(p), c.wn+maxRW)
		r, e := sysWrite(fd, p[c.wn:end])
		switch e {
		case 0:
			if r == 0 {
				c.wstalled = true
				return true
			}
			c.wn += r
			c.sent.Add(uint64(r))
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werr = e
			return true
		}
	}
	return true
}
