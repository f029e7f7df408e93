//go:build unix

package redistest

import (
	"net"
	"strconv"
	"syscall"
	"testing"
)

// DeadAddr returns a loopback address where nothing listens, held for the
// test's life by a socket that is bound and does not listen: a
// connection to it is refused, and no server started meanwhile (this
// package's, on free ports) can take its port, as one could a port closed
// after net.Listen. (A Redis that came and went there made a Dial meant to
// fail at once wait out its timeout.)
func DeadAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
}
