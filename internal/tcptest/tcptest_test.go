package tcptest

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// TestServe: each connection is served on its own and closed once serve
// returns; a serve that waits for the test's end holds its connection
// until then; the listener is gone when the test ends.
func TestServe(t *testing.T) {
	var addr string
	var held net.Conn
	t.Run("server", func(t *testing.T) {
		addr = Serve(t, func(c net.Conn) {
			line, _ := bufio.NewReader(c).ReadString('\n')
			io.WriteString(c, "got "+line)
		})
		for _, say := range []string{"a\n", "b\n"} { // two connections, each answered, then closed
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, say)
			got, err := io.ReadAll(c)
			c.Close()
			if string(got) != "got "+say || err != nil {
				t.Errorf("answer to %q = %q, %v; want %q, then the connection closed", say, got, err, "got "+say)
			}
		}
		accepted := make(chan struct{})
		hold := Serve(t, func(net.Conn) { close(accepted); <-t.Context().Done() })
		var err error
		if held, err = net.Dial("tcp", hold); err != nil {
			t.Fatal(err)
		}
		<-accepted
	})
	if held == nil {
		return // the subtest failed
	}
	defer held.Close()
	held.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := held.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("read from a connection held until the test's end, after it = %d, %v; want 0, EOF", n, err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("Dial(%s) after the test ended succeeded, want refused", addr)
	}
}
