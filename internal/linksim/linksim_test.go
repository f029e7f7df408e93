package linksim

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"
)

// TestScheduleKeepsOrder: every chunk is delivered within delay ± jitter
// of its arrival unless it waits behind the chunk before it, never before
// that chunk, and exactly at max(previous, arrival + delay + jitter).
func TestScheduleKeepsOrder(t *testing.T) {
	const delay, jitter = 20 * time.Millisecond, 5 * time.Millisecond
	r := rand.New(rand.NewPCG(1, 2))
	var draws []int64
	s := newSchedule(Link{Delay: delay, Jitter: jitter}, func(n int64) int64 {
		v := r.Int64N(n)
		draws = append(draws, v)
		return v
	})
	start := time.Unix(1000, 0)
	arrival := start
	var prev time.Time
	waited, early, late := 0, false, false
	for i := range 10000 {
		arrival = arrival.Add(time.Duration(r.Int64N(int64(3 * time.Millisecond)))) // bursts and gaps
		at := s.deliver(arrival)
		own := arrival.Add(delay + time.Duration(draws[i]) - jitter)
		want := own
		if want.Before(prev) {
			want = prev
		}
		if !at.Equal(want) {
			t.Fatalf("chunk %d delivered at %v, want max(previous %v, own %v)", i, at.Sub(start), prev.Sub(start), own.Sub(start))
		}
		if at.Before(arrival.Add(delay - jitter)) {
			t.Fatalf("chunk %d delivered %v after arrival, below delay-jitter", i, at.Sub(arrival))
		}
		if at.After(own) {
			waited++
		}
		early = early || own.Sub(arrival) < delay-jitter/2
		late = late || own.Sub(arrival) > delay+jitter/2
		prev = at
	}
	if waited == 0 || !early || !late {
		t.Errorf("over 10000 chunks: %d waited behind an earlier one, jitter reached -J/2 %v, +J/2 %v; want all", waited, early, late)
	}
}

// TestScheduleNoJitter: without jitter every chunk takes exactly the
// delay, and a negative delay is none.
func TestScheduleNoJitter(t *testing.T) {
	s := newSchedule(Link{Delay: 7 * time.Millisecond}, func(int64) int64 { panic("drew without jitter") })
	a := time.Unix(5, 0)
	if got := s.deliver(a).Sub(a); got != 7*time.Millisecond {
		t.Errorf("delay %v, want 7ms", got)
	}
	s = newSchedule(Link{Delay: -time.Second}, nil)
	if got := s.deliver(a); !got.Equal(a) {
		t.Errorf("negative delay delivered at %v, want %v", got, a)
	}
}

// TestProxy: bytes cross the proxy both ways in order, and a round trip
// takes at least twice the least one-way delay.
func TestProxy(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	const delay, jitter = 10 * time.Millisecond, 4 * time.Millisecond
	p, err := Listen("127.0.0.1:0", echo.Addr().String(), Link{delay, jitter}, Link{delay, jitter})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))

	// One round trip first: at least 2 × (delay - jitter).
	start := time.Now()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	if _, err := io.ReadFull(c, one); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt < 2*(delay-jitter) {
		t.Errorf("round trip %v through the proxy, want at least %v", rtt, 2*(delay-jitter))
	}

	// Then many small writes, each its own chunk with its own jitter:
	// they come back in order.
	var sent bytes.Buffer
	for i := range 200 {
		sent.Write([]byte{byte(i), byte(i >> 8), 0xAA})
	}
	go func() {
		for i := range 200 {
			c.Write(sent.Bytes()[3*i : 3*i+3])
			time.Sleep(100 * time.Microsecond)
		}
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, sent.Bytes()) {
		t.Fatalf("read %d bytes back, not the %d sent in order", len(got), sent.Len())
	}
}

// TestProxyCloseWithOpenConnections: Close ends connections still open.
func TestProxyCloseWithOpenConnections(t *testing.T) {
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open
		}
	}()
	p, err := Listen("127.0.0.1:0", srv.Addr().String(), Link{Delay: time.Millisecond}, Link{Delay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("hello"))
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return with a connection open")
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("read from a connection of a closed proxy succeeded")
	}
}
