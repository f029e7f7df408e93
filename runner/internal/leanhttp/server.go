// Package leanhttp serves an http.Handler over plain HTTP/1.1 with a loop
// of its own for bodiless requests, and hands every other connection to a
// net/http Server.
//
// net/http's server costs a request on loopback more than its handler
// does when the handler is quick: a goroutine started per request to
// notice a client gone (and woken, and waited for, when the handler
// returns), and read deadlines moved twice a request, each a timer that
// may wake another thread. The loop here reads a request's head, checks
// it, calls the handler and writes the answer on the connection's own
// goroutine, and moves no deadline and starts no goroutine for a request
// answered within a few milliseconds (see watch.go for the others). On
// Linux it reads and writes its connections with raw system calls
// (runner/internal/rawconn).
//
// The loop takes a request only if net/http would take it as it is: an
// HTTP/1.1 request in origin form with one valid Host, valid header
// names and values, no body (no Content-Length but 0, no
// Transfer-Encoding), no Upgrade or Expect, whose head fits in the
// connection's 4 KiB buffer. At the first request it does not take (a
// body, an upgrade, a huge head, anything malformed), the connection
// goes, with the bytes read, to Server.HTTP, which serves it from then on
// as it serves any connection: 431 for a head past MaxHeaderBytes, 400 for
// a malformed request, websockets hijacked. A Server whose HTTP has
// TLSConfig, ReadTimeout, WriteTimeout, ConnState, ConnContext or
// BaseContext set serves every connection through net/http.
package leanhttp

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Server serves HTTP.Handler. Set HTTP, then call Serve; Shutdown and
// Close stop both the loop and HTTP. Its methods are safe for concurrent
// use. Where the loop serves, Serve sets HTTP.ConnContext, so that a
// handler can find its client's connection (ClientConn).
//
// The loop follows HTTP's MaxHeaderBytes, ReadHeaderTimeout (a head that
// has not come whole that long after its first byte, or after the
// connection was accepted, closes the connection), IdleTimeout (a kept
// connection with no request for that long is closed, give or take a
// second: the deadline is moved at most once a second) and ErrorLog (a
// handler's panic). Like net/http's server, it writes the answer as
// http.ResponseWriter says: Content-Length for a short answer whose
// handler has returned, chunked otherwise, a sniffed Content-Type when
// none is set, Date, trailers, 1xx answers; a handler that panics with
// http.ErrAbortHandler cuts the answer off. Keep-alives are on until
// Shutdown (SetKeepAlivesEnabled is not followed).
type Server struct {
	HTTP *http.Server
	// WriteIdleTimeout, if positive, cuts off a client that takes none of
	// a write to it for that long (stall.go), on the loop's connections
	// and on those handed to HTTP alike (HTTP's WriteTimeout, which bounds
	// a whole answer, would have every connection served by net/http).
	WriteIdleTimeout time.Duration

	initOnce sync.Once
	epoch    time.Time // the loop's monotonic origin, for requests' start
	handoff  *handoff  // where the connections the loop does not take go
	wake     chan struct{}
	stopped  chan struct{} // closed by Shutdown and Close: the watcher stops
	fallback sync.Once     // HTTP.Serve(handoff) started

	isLean   bool        // the loop may serve (see lean), set by init
	shutting atomic.Bool // Shutdown or Close called
	watching atomic.Bool // the watcher runs (see watch.go)

	mu     sync.Mutex
	lns    map[net.Listener]struct{}
	conns  map[*conn]struct{}
	handed map[*handedConn]struct{} // handed to HTTP, their writes watched (stall.go)
	closed bool
}

// ErrServerClosed is what Serve returns after Shutdown or Close: net/http's.
var ErrServerClosed = http.ErrServerClosed

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.epoch = time.Now()
		s.handoff = &handoff{conns: make(chan net.Conn), closed: make(chan struct{})}
		s.wake = make(chan struct{}, 1)
		s.stopped = make(chan struct{})
		s.lns = map[net.Listener]struct{}{}
		s.conns = map[*conn]struct{}{}
		s.handed = map[*handedConn]struct{}{}
		h := s.HTTP
		s.isLean = h.TLSConfig == nil && h.ReadTimeout == 0 && h.WriteTimeout == 0 && h.ConnState == nil &&
			h.ConnContext == nil && h.BaseContext == nil
		if s.isLean {
			h.ConnContext = withClientConn
		}
	})
}

// lean reports whether the loop may serve HTTP's connections at all, as
// HTTP was when the server first served.
func (s *Server) lean() bool { return s.isLean }

// clientConnKey is the context key of a request's connection.
type clientConnKey struct{}

// withClientConn is HTTP's ConnContext: a request on a connection the loop
// handed over can find its connection (ClientConn).
func withClientConn(ctx context.Context, c net.Conn) context.Context {
	if h, ok := c.(*handedConn); ok {
		c = h.Conn
		if h.s != nil {
			ctx = context.WithValue(ctx, writeWatchKey{}, &h.watch)
		}
	}
	return context.WithValue(ctx, clientConnKey{}, c)
}

// ClientConn returns the client's connection of the request whose context
// ctx is or derives from, for a request the loop handed to HTTP (one with
// a body, an upgrade, ...): its socket, under the bytes net/http has not
// read, for a look such as rawconn.HungUp. nil otherwise.
func ClientConn(ctx context.Context) net.Conn {
	c, _ := ctx.Value(clientConnKey{}).(net.Conn)
	return c
}

// Serve accepts connections on ln and serves them until Shutdown or
// Close (then it returns ErrServerClosed), or until ln fails.
func (s *Server) Serve(ln net.Listener) error {
	s.init()
	if !s.lean() {
		return s.HTTP.Serve(ln)
	}
	s.mu.Lock()
	if s.closed || s.shutting.Load() {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.lns[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.lns, ln)
		s.mu.Unlock()
	}()
	s.fallback.Do(func() {
		h := s.handoff
		h.addr = ln.Addr()
		go s.HTTP.Serve(h)
		go s.watch()
	})
	var pause time.Duration
	for {
		rwc, err := ln.Accept()
		if err != nil {
			if s.shutting.Load() {
				return ErrServerClosed
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of descriptors for now: wait as net/http does.
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				time.Sleep(pause)
				continue
			}
			return err
		}
		pause = 0
		c := s.newConn(rwc)
		if !s.track(c, true) {
			rwc.Close()
			continue
		}
		go c.serve()
	}
}

// track adds c to the connections the loop serves (false once closed),
// or removes it.
func (s *Server) track(c *conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.conns, c)
		return true
	}
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

// Shutdown stops accepting, closes the connections waiting for a request
// and those that end their request, and waits until all are closed (or
// ctx is done), HTTP's included (http.Server.Shutdown).
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.shutting.Store(true)
	s.closeListeners()
	httpDone := make(chan error, 1)
	go func() { httpDone <- s.HTTP.Shutdown(ctx) }()
	t := time.NewTimer(time.Millisecond)
	defer t.Stop()
	for pause := time.Millisecond; ; pause = min(2*pause, 500*time.Millisecond) {
		if s.closeIdle() {
			s.stop()
			return <-httpDone
		}
		t.Reset(pause)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Close closes the listeners and every connection at once, HTTP's
// included (http.Server.Close).
func (s *Server) Close() error {
	s.init()
	s.shutting.Store(true)
	s.mu.Lock()
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.closeListeners()
	for _, c := range conns {
		c.rwc.Close()
	}
	s.stop()
	return s.HTTP.Close()
}

func (s *Server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.stopped:
	default:
		close(s.stopped)
	}
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	lns := make([]net.Listener, 0, len(s.lns))
	for ln := range s.lns {
		lns = append(lns, ln)
	}
	s.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	s.handoff.Close()
}

// closeIdle closes the connections that wait for a request (those never
// used after 5 seconds, as net/http does) and reports whether none is
// left.
func (s *Server) closeIdle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.mu.Lock()
		if c.state == stateIdle || (c.state == stateNew && time.Since(c.accepted) > 5*time.Second) {
			c.state = stateClosed
			c.rwc.Close()
		}
		c.mu.Unlock()
	}
	return len(s.conns) == 0
}

// logf logs to HTTP.ErrorLog, or to the standard logger as net/http does.
func (s *Server) logf(format string, args ...any) {
	if l := s.HTTP.ErrorLog; l != nil {
		l.Printf(format, args...)
		return
	}
	log.Printf(format, args...)
}

// handoff is the listener HTTP serves: the connections the loop gives up.
type handoff struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	addr   net.Addr
}

// give hands c to HTTP; false if HTTP no longer accepts.
func (h *handoff) give(c net.Conn) bool {
	select {
	case h.conns <- c:
		return true
	case <-h.closed:
		return false
	}
}

func (h *handoff) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case <-h.closed:
		return nil, net.ErrClosed
	}
}

func (h *handoff) Close() error {
	h.once.Do(func() { close(h.closed) })
	return nil
}

func (h *handoff) Addr() net.Addr { return h.addr }
