package rawconn

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// pair returns both ends of a loopback TCP connection.
func pair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// Each case runs on a wrapped connection and a plain one: both must
// behave alike (data, EOF, deadlines, closed connections, and the errors'
// words but for the ports).
func TestAsNetConn(t *testing.T) {
	if runtime.GOOS == "linux" {
		c, _ := pair(t)
		if _, ok := Wrap(c).(*Conn); !ok {
			t.Fatal("Wrap of a TCP connection on Linux is not raw")
		}
	}
	cases := map[string]func(t *testing.T, c, peer net.Conn) string{
		"data both ways": func(t *testing.T, c, peer net.Conn) string {
			go io.Copy(peer, peer) // echo
			big := bytes.Repeat([]byte("0123456789"), 1<<20)
			go c.Write(big)
			got := make([]byte, len(big))
			if _, err := io.ReadFull(c, got); err != nil {
				return "read: " + err.Error()
			}
			return "equal " + fmtBool(bytes.Equal(got, big))
		},
		"EOF": func(t *testing.T, c, peer net.Conn) string {
			io.WriteString(peer, "last")
			peer.Close()
			b, err := io.ReadAll(c)
			return string(b) + " " + fmtErr(err)
		},
		"read deadline": func(t *testing.T, c, peer net.Conn) string {
			c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			_, err := c.Read(make([]byte, 10))
			var ne net.Error
			return fmtErr(err) + " timeout " + fmtBool(errors.As(err, &ne) && ne.Timeout()) + " deadline " + fmtBool(errors.Is(err, os.ErrDeadlineExceeded))
		},
		"deadline in the past": func(t *testing.T, c, peer net.Conn) string {
			io.WriteString(peer, "x")
			time.Sleep(10 * time.Millisecond)
			c.SetReadDeadline(time.Unix(1, 0))
			_, err := c.Read(make([]byte, 10))
			return fmtErr(err)
		},
		"write deadline": func(t *testing.T, c, peer net.Conn) string {
			c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			var err error
			for range 10000 {
				if _, err = c.Write(make([]byte, 1<<20)); err != nil {
					break
				}
			}
			return fmtErr(err)
		},
		"read after close": func(t *testing.T, c, peer net.Conn) string {
			c.Close()
			_, err := c.Read(make([]byte, 10))
			return fmtErr(err) + " closed " + fmtBool(errors.Is(err, net.ErrClosed))
		},
		"write after close": func(t *testing.T, c, peer net.Conn) string {
			c.Close()
			_, err := c.Write([]byte("x"))
			return fmtErr(err) + " closed " + fmtBool(errors.Is(err, net.ErrClosed))
		},
		"close while reading": func(t *testing.T, c, peer net.Conn) string {
			go func() { time.Sleep(20 * time.Millisecond); c.Close() }()
			_, err := c.Read(make([]byte, 10))
			return fmtErr(err)
		},
		"write to a peer gone": func(t *testing.T, c, peer net.Conn) string {
			peer.(*net.TCPConn).SetLinger(0)
			peer.Close()
			time.Sleep(20 * time.Millisecond)
			var err error
			for range 100 {
				if _, err = c.Write(make([]byte, 1<<16)); err != nil {
					break
				}
			}
			return "failed " + fmtBool(err != nil)
		},
		"empty read and write": func(t *testing.T, c, peer net.Conn) string {
			n, err := c.Read(nil)
			m, err2 := c.Write(nil)
			return fmtErr(err) + fmtErr(err2) + string(rune('0'+n+m))
		},
		"half close": func(t *testing.T, c, peer net.Conn) string {
			if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
				return err.Error()
			}
			b, err := io.ReadAll(peer)
			return string(b) + fmtErr(err)
		},
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			c1, p1 := pair(t)
			c2, p2 := pair(t)
			raw, plain := run(t, Wrap(c1), p1), run(t, c2, p2)
			raw = strings.ReplaceAll(raw, c1.LocalAddr().String(), "L")
			raw = strings.ReplaceAll(raw, c1.RemoteAddr().String(), "R")
			plain = strings.ReplaceAll(plain, c2.LocalAddr().String(), "L")
			plain = strings.ReplaceAll(plain, c2.RemoteAddr().String(), "R")
			if raw != plain {
				t.Errorf("wrapped: %s\nplain:   %s", raw, plain)
			}
		})
	}
}

func fmtErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func fmtBool(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
