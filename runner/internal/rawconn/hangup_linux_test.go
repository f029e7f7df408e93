package rawconn

import (
	"io"
	"net"
	"testing"
	"time"
)

// HungUp sees a peer's close or reset behind bytes not read yet, and
// nothing while the peer is there, sends, or waits.
func TestHungUp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reset bool
	}{{"close", false}, {"reset", true}} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := pair(t)
			if HungUp(server) {
				t.Fatal("HungUp of a fresh connection")
			}
			io.WriteString(client, "a body not read yet")
			if HungUp(server) {
				t.Fatal("HungUp with bytes waiting and the peer still there")
			}
			if tc.reset {
				client.(*net.TCPConn).SetLinger(0)
			}
			client.Close()
			deadline := time.Now().Add(10 * time.Second)
			for !HungUp(server) {
				if time.Now().After(deadline) {
					t.Fatal("HungUp never saw the peer go")
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	c, _ := pair(t)
	c.Close()
	if !HungUp(c) {
		t.Error("HungUp of a connection closed on this side = false, want true")
	}
}

// Closed sees a peer's close, and bytes nobody asked for, on a wrapped
// connection as on a plain one, and looks without allocating (it runs
// before every request written on a kept connection).
func TestClosed(t *testing.T) {
	for _, wrap := range []bool{false, true} {
		client, server := pair(t)
		if wrap {
			client = Wrap(client)
		}
		if Closed(client) {
			t.Fatalf("wrapped %v: Closed of an idle connection = true, want false", wrap)
		}
		if wrap {
			if n := testing.AllocsPerRun(100, func() { Closed(client) }); n != 0 {
				t.Errorf("Closed of a wrapped connection: %v allocations, want 0", n)
			}
		}
		io.WriteString(server, "x")
		waitClosed(t, client, wrap)
		client, server = pair(t)
		if wrap {
			client = Wrap(client)
		}
		server.Close()
		waitClosed(t, client, wrap)
		client.Close()
		if !Closed(client) {
			t.Errorf("wrapped %v: Closed of a connection closed on this side = false, want true", wrap)
		}
	}
}

// waitClosed waits, 10 s at most, for Closed(c) to see what its peer did.
func waitClosed(t *testing.T, c net.Conn, wrap bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !Closed(c) {
		if time.Now().After(deadline) {
			t.Fatalf("wrapped %v: Closed never saw its peer's bytes or close", wrap)
		}
		time.Sleep(time.Millisecond)
	}
}
