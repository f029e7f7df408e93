// Package tcptest is a test helper: TCP servers on loopback that speak by
// hand, for tests of a client whose peer is not what it expects (a port
// that is not Redis, an HTTP upstream that breaks the protocol) or does
// not answer at all.
package tcptest

import (
	"net"
	"testing"
)

// Serve listens on a free loopback port until the test ends and serves
// each connection it accepts with serve, on a goroutine of its own,
// closing the connection when serve returns. It returns the address,
// host:port. A serve that returns at once closes every connection before
// answering; one that blocks on <-t.Context().Done() holds its connection
// open, unanswered, until the test ends.
func Serve(t testing.TB, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("tcptest: listen on loopback: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}
