package metrics

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countListener counts the connections accepted and not yet closed, and
// their peak.
type countListener struct {
	net.Listener
	open, peak atomic.Int64
}

func (l *countListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.open.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &countConn{Conn: c, l: l}, nil
}

type countConn struct {
	net.Conn
	l    *countListener
	once sync.Once
}

func (c *countConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// serveCounted serves snap (nil: a snapshot of one rule) within lim on a
// loopback port.
func serveCounted(t *testing.T, lim limits, snap func() Snapshot) (*Server, *countListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countListener{Listener: ln}
	if snap == nil {
		snap = func() Snapshot { return Snapshot{Rules: []Rule{{Rule: "5/s"}}} }
	}
	s, err := serve(cl, snap, lim)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, cl
}

// waitFor polls cond until it holds, failing after timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("no %s after %s", what, timeout)
		}
	}
}

const scrapeRequest = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"

// TestServeBoundsConnections: clients that scrape once and keep their
// connections open hold no more than the limit of pace's descriptors,
// and each is closed once idle, so that every client is served in turn.
// The server used to accept every connection and keep it idle for as
// long as its client liked: 250 such connections ran a pace with 200
// descriptors out of them, its jobs could not start, and net/http's
// "accept: too many open files" reached stderr.
func TestServeBoundsConnections(t *testing.T) {
	t.Parallel()
	const limit, clients = 2, 10
	s, cl := serveCounted(t, limits{conns: limit, idle: 100 * time.Millisecond, read: 10 * time.Second,
		write: 10 * time.Second, headerBytes: 8 << 10}, nil)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			c, err := net.Dial("tcp", s.Addr())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.WriteString(c, scrapeRequest); err != nil {
				errs <- err
				return
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				errs <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- &net.AddrError{Err: resp.Status, Addr: s.Addr()}
				return
			}
			// Kept alive and idle: the server closes it.
			if _, err := br.ReadByte(); err != io.EOF {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("client: %v", err)
	}
	if p := cl.peak.Load(); p > limit {
		t.Errorf("the server held %d connections at once, want at most %d", p, limit)
	}
}

// TestServeCutsStalledClients: a client that sends requests and reads
// none of the answers is cut once a write has stalled, and gives its
// place to the next; Close cuts the scrapes under way, so that their
// connections do not outlive the server.
func TestServeCutsStalledClients(t *testing.T) {
	t.Parallel()
	stall := func(t *testing.T, addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		go func() {
			c.SetWriteDeadline(time.Now().Add(20 * time.Second))
			for {
				if _, err := io.WriteString(c, scrapeRequest); err != nil {
					return
				}
			}
		}()
		return c
	}

	t.Run("write", func(t *testing.T) {
		t.Parallel()
		s, _ := serveCounted(t, limits{conns: 1, idle: time.Minute, read: 200 * time.Millisecond,
			write: 200 * time.Millisecond, headerBytes: 8 << 10}, nil)
		stall(t, s.Addr())
		client := &http.Client{Timeout: 20 * time.Second}
		resp, err := client.Get("http://" + s.Addr() + "/metrics")
		if err != nil {
			t.Fatalf("a scrape behind a client that reads nothing: %v", err)
		}
		resp.Body.Close()
	})

	t.Run("close", func(t *testing.T) {
		t.Parallel()
		// A scrape that does not end (here: its snapshot never comes).
		entered, never := make(chan struct{}), make(chan struct{})
		t.Cleanup(func() { close(never) })
		var once sync.Once
		s, cl := serveCounted(t, limits{conns: 1, idle: time.Minute, read: time.Minute, write: time.Minute,
			headerBytes: 8 << 10}, func() Snapshot {
			once.Do(func() { close(entered) })
			<-never
			return Snapshot{}
		})
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, scrapeRequest)
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the scrape did not start")
		}
		start := time.Now()
		s.Close()
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Close took %s", d)
		}
		waitFor(t, "connection closed by Close", 5*time.Second, func() bool { return cl.open.Load() == 0 })
	})
}
