//go:build linux

package rawconn

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
)

// A read that finds nothing parks its goroutine until the network poller
// sees the socket readable. When nothing else runs in the process, as
// between the turns of a proxy that serves one client, that costs a
// thread going to sleep in epoll_wait (its CPU idle) and being woken by
// the kernel when the bytes come, tens of µs on a virtual machine whose
// idle CPU must be woken too. A loopback upstream answers a proxy's
// request, and a client such as wrk sends its next one, within 10–50 µs, and
// mostly within 100 µs under other load.
//
// So the first time a read finds nothing, if it is the only read in
// progress in the process and no other read spins, it tries again for up
// to spinFor, yielding its P between tries (runtime.Gosched: any other
// goroutine ready to run runs first), before it parks as before. A
// process with more than one connection waiting to read (the proxy under
// load, or with idle kept connections) never spins: there, a spin would
// take a CPU from work that is ready. A connection idle for longer spins
// once, for spinFor, then parks. The spin stops at the read deadline
// and at Close, so a read ends as net.Conn's would.
var (
	// spinFor is how long a read spins, in nanoseconds (0: never).
	spinFor atomic.Int64
	// readers is the number of Reads in progress, parked or not.
	readers atomic.Int32
	// spinning is set while a read spins.
	spinning atomic.Bool
)

// 100 µs: in alternated runs (wrk -t1 -c1 through the proxy) 25 µs was
// worse than no spin (most spins failed, and cost), 100 µs a little
// better than 50, 200 µs no better than 100.
func init() { spinFor.Store(int64(100 * time.Microsecond)) }

// spin retries the read of c.rp from fd, as the package's comment says:
// true if it ended the read (data, EOF or an error, in c.rn and c.rerr),
// false if the read must wait for the poller (which then sees the
// deadline passed or the connection closed, if that is what stopped it).
func (c *Conn) spin(fd uintptr) bool {
	budget := time.Duration(spinFor.Load())
	if budget <= 0 || readers.Load() != 1 || !spinning.CompareAndSwap(false, true) {
		return false
	}
	defer spinning.Store(false)
	start := time.Now()
	for {
		runtime.Gosched()
		r, e := sysRead(fd, c.rp)
		if e != syscall.EAGAIN && e != syscall.EINTR {
			c.rn, c.rerr = r, e
			return true
		}
		now := time.Now()
		if now.Sub(start) >= budget || c.closed.Load() {
			return false
		}
		if d := c.rdeadline.Load(); d != 0 && now.UnixNano() >= d {
			return false
		}
	}
}

// SetDeadline sets the connection's read and write deadlines, as
// net.Conn's does.
func (c *Conn) SetDeadline(t time.Time) error {
	err := c.TCPConn.SetDeadline(t)
	c.rdeadline.Store(unixNano(t))
	return err
}

// SetReadDeadline sets the connection's read deadline, as net.Conn's
// does.
func (c *Conn) SetReadDeadline(t time.Time) error {
	err := c.TCPConn.SetReadDeadline(t)
	c.rdeadline.Store(unixNano(t))
	return err
}

// Close closes the connection, as net.Conn's does; a read spinning stops.
// The flag comes first: the TCPConn's Close waits for the reads in
// progress to end (and wakes those parked in the poller).
func (c *Conn) Close() error {
	c.closed.Store(true)
	return c.TCPConn.Close()
}

// unixNano is t in Unix nanoseconds, 0 for the zero time (no deadline);
// a deadline before 1970 is 1 (passed).
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.UnixNano(), 1)
}
