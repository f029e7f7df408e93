package rawconn

import (
	"net"
	"syscall"
	"unsafe"
)

// poll(2)'s events (asm-generic; the same on every architecture Go runs
// Linux on but sparc, which Go does not).
const (
	pollErr   = 0x8
	pollHup   = 0x10
	pollRDHup = 0x2000
)

// pollFd is struct pollfd.
type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

// HungUp reports whether c's peer has closed its side of the connection
// (sent FIN) or reset it, as poll(2) tells without reading or waiting.
// Unlike a read, it sees the close behind bytes not yet read, such as a
// request's body the server has not taken yet. A peer that only shut down
// its writing, and still reads, counts as gone too, as net/http's server
// counts it.
func HungUp(c net.Conn) bool {
	rc, ok := syscallConn(c)
	if !ok {
		return false
	}
	hung := false
	err := rc.Control(func(fd uintptr) {
		p := pollFd{fd: int32(fd), events: pollRDHup}
		var zero syscall.Timespec // do not wait
		n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&p)), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
		hung = errno == 0 && n == 1 && p.revents&(pollErr|pollHup|pollRDHup) != 0
	})
	return hung || err != nil
}
