// Package rawconn wraps a TCP connection so that its reads and writes,
// on Linux, are system calls the Go scheduler is not told of.
//
// Every read and write of a net.Conn enters the runtime's syscall state
// (entersyscall), and when every P is idle, as it is between the turns
// of a proxy that serves one client at a time, the runtime's monitor
// thread (sysmon) sleeps, and the next syscall wakes it: a futex wake, a
// thread run on another CPU, and its polling until it sees the process
// idle again. A loopback request through pace proxy made two of those a
// request (`perf stat`: 4.6 context switches a request, 2.3 without).
// A read or write of a non-blocking socket never blocks, so the scheduler
// need not know of it: Conn makes it with syscall.RawSyscall inside the
// connection's RawConn, which waits for readiness and keeps deadlines as
// net.Conn's own Read and Write do.
//
// Elsewhere than Linux, Wrap returns the connection as it is.
package rawconn

import (
	"net"
	"syscall"
)

// Wrap returns c with raw reads and writes if it is a *net.TCPConn on
// Linux, and c itself otherwise.
func Wrap(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok || !supported {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &Conn{TCPConn: tc, rc: rc}
}

// Conn is a *net.TCPConn whose Read and Write are raw system calls (see
// the package's comment); its other methods are the TCPConn's.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn
}

// opError wraps err as net.Conn's Read and Write wrap theirs.
func (c *Conn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok { // RawConn's, with Op "raw-read" or "raw-write"
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
