package rawconn

import (
	"net"
	"syscall"
	"unsafe"
)

// siocOutQ is SIOCOUTQ (TIOCOUTQ): the bytes of a TCP socket's send
// queue, sent or not, that its peer has not acknowledged.
const siocOutQ = 0x5411

// Acked returns how many of the bytes written to c its peer has
// acknowledged so far (taken into its receive buffer), and true; false
// if c is not a Conn. A write blocked on a peer that reads slowly returns
// only once the kernel has room for a large part of it, so the bytes
// sent say little of a slow reader: the bytes acknowledged grow as it
// reads, however slowly, and stop when it does.
func Acked(c net.Conn) (uint64, bool) {
	rc, ok := c.(*Conn)
	if !ok {
		return 0, false
	}
	sent := rc.sent.Load()
	var queued int32
	var errno syscall.Errno
	err := rc.rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, siocOutQ, uintptr(unsafe.Pointer(&queued)))
	})
	if err != nil || errno != 0 || queued < 0 {
		return 0, false
	}
	return sent - min(sent, uint64(queued)), true
}
