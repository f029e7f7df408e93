//go:build linux

package rawconn

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSpinKeepsNetConnSemantics starts a read that spins (for up to a
// minute), and while it spins does what must end a read: data, EOF, a
// deadline moved into the past, Close. The read must end as net.Conn's
// would, well before its spin would.
func TestSpinKeepsNetConnSemantics(t *testing.T) {
	long(t)
	cases := map[string]struct {
		do   func(c, peer net.Conn)
		want func(n int, err error) bool
	}{
		"data": {
			func(c, peer net.Conn) { io.WriteString(peer, "hello") },
			func(n int, err error) bool { return n == 5 && err == nil },
		},
		"EOF": {
			func(c, peer net.Conn) { peer.Close() },
			func(n int, err error) bool { return n == 0 && err == io.EOF },
		},
		"deadline moved into the past": {
			func(c, peer net.Conn) { c.SetReadDeadline(time.Unix(1, 0)) },
			func(n int, err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) },
		},
		"deadline for all moved into the past": {
			func(c, peer net.Conn) { c.SetDeadline(time.Unix(1, 0)) },
			func(n int, err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) },
		},
		"close": {
			func(c, peer net.Conn) { c.Close() },
			func(n int, err error) bool { return errors.Is(err, net.ErrClosed) },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c0, peer := pair(t)
			c := Wrap(c0)
			type result struct {
				n   int
				err error
			}
			done := make(chan result, 1)
			start := time.Now()
			go func() {
				n, err := c.Read(make([]byte, 10))
				done <- result{n, err}
			}()
			waitSpinning(t)
			tc.do(c, peer)
			select {
			case r := <-done:
				if !tc.want(r.n, r.err) {
					t.Errorf("read: %d, %v", r.n, r.err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the read did not end (the spin did not stop)")
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("the read ended after %v", d)
			}
		})
	}
}

// TestSpinStopsAtTheDeadline: a deadline set before the read, shorter
// than the spin, ends it.
func TestSpinStopsAtTheDeadline(t *testing.T) {
	long(t)
	c0, _ := pair(t)
	c := Wrap(c0)
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	start := time.Now()
	_, err := c.Read(make([]byte, 10))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read: %v, want a deadline exceeded", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the read ended after %v, its deadline was 20ms", d)
	}
}

// TestNoSpinWithAnotherReader: while another read waits, a read that
// finds nothing parks without spinning.
func TestNoSpinWithAnotherReader(t *testing.T) {
	was := spinFor.Load()
	spinFor.Store(0)
	t.Cleanup(func() { spinFor.Store(was) })
	a0, _ := pair(t)
	a := Wrap(a0)
	adone := make(chan error, 1)
	go func() {
		_, err := a.Read(make([]byte, 1))
		adone <- err
	}()
	waitFor(t, "the first read parked", func() bool { return parkedReads() == 1 })

	spinFor.Store(int64(time.Minute)) // a spin would outlast waitFor
	b0, bpeer := pair(t)
	b := Wrap(b0)
	bdone := make(chan error, 1)
	go func() {
		_, err := b.Read(make([]byte, 1))
		bdone <- err
	}()
	waitFor(t, "the second read parked without spinning", func() bool { return parkedReads() == 2 })
	io.WriteString(bpeer, "x")
	if err := <-bdone; err != nil {
		t.Errorf("second read: %v", err)
	}
	a.Close()
	if err := <-adone; !errors.Is(err, net.ErrClosed) {
		t.Errorf("first read: %v", err)
	}
}

// parkedReads is the number of goroutines parked in the poller in a
// Conn's Read.
func parkedReads() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "[IO wait") && strings.Contains(g, "rawconn.(*Conn).Read(") {
			n++
		}
	}
	return n
}

// long makes reads spin for a minute for the test's length.
func long(t *testing.T) {
	was := spinFor.Load()
	spinFor.Store(int64(time.Minute))
	t.Cleanup(func() { spinFor.Store(was) })
}

func waitSpinning(t *testing.T) {
	t.Helper()
	waitFor(t, "a read spins", spinning.Load)
}

// waitFor waits for cond, and fails the test if it is not met within 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for: %s", what)
		}
		runtime.Gosched()
	}
}
