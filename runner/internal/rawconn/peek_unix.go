//go:build unix

package rawconn

import (
	"net"
	"syscall"
)

// Closed reports whether c can no longer carry a request: its peer has
// closed it, reset it, or sent something nobody asked for, as a look at
// its socket tells without reading or waiting. A connection kept idle
// that the server closed meanwhile is found so before a request is
// written on it, not after, when the request may have been read.
func Closed(c net.Conn) bool {
	if rc, ok := c.(*Conn); ok {
		return rc.peekClosed()
	}
	rc, ok := syscallConn(c)
	if !ok {
		return false
	}
	closed := false
	var b [1]byte
	err := rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n > 0 || err == nil || err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR
		return true // never wait
	})
	return closed || err != nil
}

// syscallConn returns c's socket, if it has one.
func syscallConn(c net.Conn) (syscall.RawConn, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	return rc, err == nil
}

// peekClosed is Closed for a Conn, without allocating: the Conn's own
// RawConn (a TCPConn's SyscallConn makes one at every call), and a
// callback and result kept in the Conn (a closure would escape). Closed
// runs before each request the direct path writes on a kept connection.
func (c *Conn) peekClosed() bool {
	c.peekMu.Lock()
	defer c.peekMu.Unlock()
	if c.peekFn == nil {
		c.peekFn = c.peek
	}
	c.peeked = false
	err := c.rc.Read(c.peekFn)
	return c.peeked || err != nil
}

// peek is peekClosed's callback: a look at the socket that never waits.
// Requires peekMu held.
func (c *Conn) peek(fd uintptr) bool {
	n, _, err := syscall.Recvfrom(int(fd), c.peekBuf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	c.peeked = n > 0 || err == nil || err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR
	return true
}
