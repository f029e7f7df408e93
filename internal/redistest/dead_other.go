//go:build !unix

package redistest

import (
	"net"
	"testing"
)

// DeadAddr returns a loopback address where nothing listens: a port
// closed after net.Listen, which another server may take meanwhile.
func DeadAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
