package leanhttp

import (
	"errors"
	"time"
)

// Seeing a client go while its request is served.
//
// net/http's server reads every connection while its handler runs, on a
// goroutine started for each request, so that a client gone cancels the
// request's context. The loop does that only for requests still in the
// handler watchAfter after it was called: one goroutine of the server's
// looks every watchAfter for such requests, while any are being served,
// and starts a read of their connection. A client gone is seen at most
// about 2*watchAfter after its request began, or at once if it goes
// later; a quick request costs nothing but a lock.

// watchAfter is how long a request is in the handler before its
// client's connection is watched, and how often the server looks.
const watchAfter = 2 * time.Millisecond

// quietLooks is how many looks that find nothing served the watcher
// makes before it sleeps until the next request.
const quietLooks = 50

// errClientGone is the cause of a request's context cancelled because
// its client closed the connection.
var errClientGone = errors.New("leanhttp: the client closed the connection")

// aLongTimeAgo is a deadline that makes a read return at once.
var aLongTimeAgo = time.Unix(1, 0)

// startWatching wakes the watcher, if it sleeps.
func (s *Server) startWatching() {
	if s.watching.CompareAndSwap(false, true) {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// watch is the server's watcher: while requests are being served, it
// looks every watchAfter for those served longer than that.
func (s *Server) watch() {
	t := time.NewTimer(watchAfter)
	t.Stop()
	for {
		select {
		case <-s.wake:
		case <-s.stopped:
			return
		}
		for quiet := 0; quiet < quietLooks; {
			t.Reset(watchAfter)
			select {
			case <-t.C:
			case <-s.stopped:
				return
			}
			if s.look() == 0 {
				quiet++
			} else {
				quiet = 0
			}
		}
		s.watching.Store(false)
		// A request that began after the last look and before the store
		// found the watcher awake and did not wake it: look again.
		if s.look() > 0 && s.watching.CompareAndSwap(false, true) {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
}

// look starts watching the connections whose request has been in the
// handler for watchAfter or more, cuts off the writes stalled for
// WriteIdleTimeout (stall.go), and returns how many connections are in a
// handler or, handed to HTTP, in a write.
func (s *Server) look() int {
	now := time.Since(s.epoch)
	n := 0
	stalls := s.WriteIdleTimeout > 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.mu.Lock()
		if c.state == stateServing {
			n++
			if !c.watched && now-c.since >= watchAfter {
				c.watched = true
				c.watchDone = make(chan struct{})
				go c.watchClient(c.watchDone)
			}
		}
		c.mu.Unlock()
		if stalls {
			s.lookWrite(&c.watch, c.rwc, now)
		}
	}
	for h := range s.handed {
		if s.lookWrite(&h.watch, h.Conn, now) {
			n++
		}
	}
	return n
}

// watchClient reads the client's connection until the request is over
// (unwatch) or the client goes: then the request's context is cancelled
// with errClientGone. A byte read is the start of the next request
// (pipelined), kept for it; the client is not watched further, as
// net/http's server does.
func (c *conn) watchClient(done chan struct{}) {
	defer close(done)
	c.rwc.SetReadDeadline(time.Time{})
	n, err := c.rwc.Read(c.r.b[:])
	if n == 1 {
		c.r.hasByte = true
		return
	}
	c.mu.Lock()
	over := !c.watched // unwatch came first: the deadline, not the client
	c.mu.Unlock()
	if err != nil && !over {
		c.cancel(errClientGone)
	}
}

// unwatch ends the request's time in the handler: the connection waits
// for the next request, and its client is no longer watched. It reports
// whether Shutdown closed the connection.
func (c *conn) unwatch() (closed bool) {
	c.mu.Lock()
	watched, done := c.watched, c.watchDone
	c.watched = false
	c.watchDone = nil
	closed = c.state == stateClosed
	if !closed {
		c.state = stateIdle
	}
	c.mu.Unlock()
	if watched {
		c.rwc.SetReadDeadline(aLongTimeAgo)
		<-done
		c.deadline = aLongTimeAgo // the next wait sets its own
	}
	return closed
}
