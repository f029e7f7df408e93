package rawconn

import (
	"io"
	"testing"
	"time"
)

// Acked counts what the peer took: nothing while it reads nothing (the
// write blocked behind its full window), then every byte as it reads.
func TestAcked(t *testing.T) {
	c, peer := pair(t)
	if _, ok := Acked(c); ok {
		t.Error("Acked of a connection not wrapped: ok")
	}
	rc := Wrap(c)
	const size = 64 << 20 // more than both sockets' buffers
	done := make(chan error, 1)
	go func() {
		_, err := rc.Write(make([]byte, size))
		done <- err
	}()
	var last uint64
	waitFor(t, "the write blocked behind the peer's full window", func() bool {
		a, ok := Acked(rc)
		if !ok {
			t.Fatal("Acked of a wrapped connection: not ok")
		}
		still := a == last && a > 0
		last = a
		time.Sleep(50 * time.Millisecond)
		return still
	})
	if n, _ := Acked(rc); n != last || n >= size {
		t.Errorf("Acked = %d while the peer reads nothing, then %d", last, n)
	}
	if _, err := io.CopyN(io.Discard, peer, size); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every byte acknowledged", func() bool { n, _ := Acked(rc); return n == size })
}
