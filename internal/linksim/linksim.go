// Package linksim is a test and benchmark helper: a TCP proxy that makes a
// loopback connection look like a slow link, adding a one-way delay with
// jitter to each direction of every connection it forwards.
//
// Jitter never reorders a TCP stream: a chunk read at instant a is
// delivered at max(the previous chunk's delivery, a + Delay + j), j drawn
// uniformly from [-Jitter, +Jitter] for each chunk, so a chunk may wait
// behind a slower one before it, as on a real link, and bytes keep their
// order. Each direction of each connection has its own schedule.
package linksim

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Link is the delay of one direction.
type Link struct {
	Delay  time.Duration // the mean one-way delay
	Jitter time.Duration // each chunk's delay varies by up to ± this much
}

// schedule decides when the chunks of one direction of one connection
// are delivered. It is not safe for concurrent use.
type schedule struct {
	link Link
	rnd  func(n int64) int64 // a uniform draw from [0, n)
	last time.Time           // the previous chunk's delivery
}

func newSchedule(l Link, rnd func(int64) int64) *schedule {
	l.Delay, l.Jitter = max(l.Delay, 0), max(l.Jitter, 0)
	return &schedule{link: l, rnd: rnd}
}

// deliver returns when a chunk read at arrival is delivered: arrival plus
// the delay and a jitter drawn from [-Jitter, +Jitter] (the delay never
// below 0), but never before the previous chunk.
func (s *schedule) deliver(arrival time.Time) time.Time {
	d := s.link.Delay
	if j := s.link.Jitter; j > 0 {
		d += time.Duration(s.rnd(int64(2*j)+1)) - j
	}
	t := arrival.Add(max(d, 0))
	if t.Before(s.last) {
		t = s.last
	}
	s.last = t
	return t
}

// Proxy forwards every connection it accepts to a target address, the
// bytes from the client delayed by Up and those from the target by Down.
type Proxy struct {
	ln       net.Listener
	target   string
	up, down Link

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

// Listen starts a proxy on addr (such as "127.0.0.1:0") to target.
func Listen(addr, target string, up, down Link) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, up: up, down: down, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr returns the proxy's address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// track adds c to the connections Close closes; false if closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if !p.track(c) {
			continue
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

// forward connects c to the target and carries bytes both ways until
// both directions have ended.
func (p *Proxy) forward(c net.Conn) {
	defer p.wg.Done()
	defer p.untrack(c)
	t, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(t) {
		return
	}
	defer p.untrack(t)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pipe(t, c, newSchedule(p.up, rand.Int64N)) }()
	go func() { defer wg.Done(); pipe(c, t, newSchedule(p.down, rand.Int64N)) }()
	wg.Wait()
}

// chunk is bytes read, to be written at a given instant.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies src to dst, each chunk read written when s says. When src
// ends, dst's write side is closed once every chunk has been written; if
// dst fails, src is closed.
func pipe(dst, src net.Conn, s *schedule) {
	q := make(chan chunk, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ch := range q {
			if d := time.Until(ch.at); d > 0 {
				time.Sleep(d)
			}
			if _, err := dst.Write(ch.b); err != nil {
				src.Close()
				for range q { // drain: the reader stops on the closed src
				}
				return
			}
		}
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			q <- chunk{b: append([]byte(nil), buf[:n]...), at: s.deliver(time.Now())}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				dst.Close() // a reset, not an end: the other side sees it too
			}
			break
		}
	}
	close(q)
	<-done
}
