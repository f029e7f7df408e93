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
