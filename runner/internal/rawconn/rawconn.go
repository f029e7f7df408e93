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
// A read that finds nothing, when it is the only read in progress in the
// process, tries again for up to 100 µs before it parks (spin_linux.go).
//
// Under the race detector the calls are package syscall's, which tell it
// what they read and write and order a write before the read that sees
// it, as net.Conn's do. Elsewhere than Linux, Wrap returns the connection
// as it is.
package rawconn

import (
	"net"
	"sync"
	"sync/atomic"
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
	c2 := &Conn{TCPConn: tc, rc: rc}
	c2.readFn, c2.writeFn = c2.read, c2.write
	return c2
}

// Conn is a *net.TCPConn whose Read and Write are raw system calls (see
// the package's comment); its other methods are the TCPConn's.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn

	// A read's state, given to rc.Read's callback through readFn (a
	// closure would be allocated at every call); guarded by readMu.
	readMu sync.Mutex
	readFn func(fd uintptr) bool
	rp     []byte
	rn     int
	rerr   syscall.Errno
	rspun  bool // this read has spun once already

	// What a spinning read must stop for (spin_linux.go): the read
	// deadline in Unix nanoseconds (0 for none), and Close.
	rdeadline atomic.Int64
	closed    atomic.Bool

	// A write's, likewise.
	writeMu  sync.Mutex
	writeFn  func(fd uintptr) bool
	wp       []byte
	wn       int
	werr     syscall.Errno
	wstalled bool
	// sent counts the bytes written, for Acked: read by other goroutines.
	sent atomic.Uint64

	// Closed's look at the socket (peek_unix.go), guarded by peekMu.
	peekMu  sync.Mutex
	peekFn  func(fd uintptr) bool
	peekBuf [1]byte
	peeked  bool
}

// opError wraps err as net.Conn's Read and Write wrap theirs.
func (c *Conn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok { // RawConn's, with Op "raw-read" or "raw-write"
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
