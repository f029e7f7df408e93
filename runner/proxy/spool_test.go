package proxy

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A client that leaves while much of its body is still unsent (more than
// the sockets hold) is seen gone while its request waits: the body is
// drained, so its close comes through, and nothing is sent upstream.
// Before, its FIN stayed in its kernel behind the body, and the request
// went upstream once admitted.
func TestClientGoneBehindItsBodySpendsNothing(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			url, release, bodied := holdUpstream(t)
			tp := startProxy(t, url, "", 1, nil)
			// The body's first byte with the head: a request is not
			// admitted, and does not wait, before it.
			head := "POST /gone HTTP/1.1\r\nHost: x\r\nContent-Length: 8000000\r\n\r\nx"
			if chunked {
				// More than readBody takes before the wait, so that it waits.
				head = "POST /gone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n11000\r\n" + strings.Repeat("x", 0x11000) + "\r\n"
			}
			c, held := waitBehindHeld(t, tp, head)
			// 2 MB of the body, far more than the sockets hold: without a
			// drain these writes would block, and the close after them
			// would never reach the proxy.
			body := strings.Repeat("x", 1<<20)
			c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			for range 2 {
				if chunked {
					fmt.Fprintf(c, "%x\r\n%s\r\n", len(body), body)
				} else {
					io.WriteString(c, body)
				}
			}
			closeSeenGone(t, tp, c, release, held, bodied)
			eventually(t, "the spool given back", func() bool { return tp.p.spooled.Load() == 0 && tp.p.buffered.Load() == 0 })
		})
	}
}

// A long body that waits arrives upstream whole and in order, from the
// memory spool, the file and the client, with a length or chunked; and
// when the spool is full (its disk budget spent), the rest waits in the
// client's socket and comes after, still whole.
func TestDrainedBodyArrivesWhole(t *testing.T) {
	sum := func(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }
	body := make([]byte, 3<<20+12345)
	for i := range body {
		body[i] = byte(rand.IntN(256))
	}
	want := sum(body)
	for _, tc := range []struct {
		name    string
		chunked bool
		budget  int64
	}{
		{"length", false, spoolBudget},
		{"chunked", true, spoolBudget},
		{"length, budget spent", false, 100 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(b int64) { spoolBudget = b }(spoolBudget)
			spoolBudget = tc.budget
			held, release := make(chan struct{}), make(chan struct{})
			var got atomic.Value
			srv := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/hold" {
					close(held)
					<-release
					return
				}
				b, err := io.ReadAll(r.Body)
				if err != nil {
					t.Errorf("upstream read: %v", err)
				}
				got.Store(sum(b))
				fmt.Fprint(w, len(b))
			})
			tp := startProxy(t, srv.URL, "", 1, nil)
			go http.Get(tp.url + "/hold")
			<-held
			c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			done := make(chan error, 1)
			go func() {
				var err error
				if tc.chunked {
					_, err = io.WriteString(c, "PUT /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
					for rest := body; err == nil && len(rest) > 0; {
						k := min(len(rest), 100000)
						_, err = fmt.Fprintf(c, "%x\r\n%s\r\n", k, rest[:k])
						rest = rest[k:]
					}
					if err == nil {
						_, err = io.WriteString(c, "0\r\n\r\n")
					}
				} else {
					_, err = fmt.Fprintf(c, "PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				}
				done <- err
			}()
			if tc.budget == spoolBudget {
				// The whole body drained while the request waits: the
				// client's writes end before the admission.
				select {
				case err := <-done:
					if err != nil {
						t.Fatal(err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the client's body was not read while its request waited")
				}
			}
			time.Sleep(50 * time.Millisecond) // let the drain stop, where the budget is spent
			close(release)
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(n) != fmt.Sprint(len(body)) || got.Load() != want {
				t.Errorf("upstream got %s bytes (status %d), sha256 %v; want %d bytes, %s", n, resp.StatusCode, got.Load(), len(body), want)
			}
			if tc.budget != spoolBudget {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, "the spool given back", func() bool { return tp.p.spooled.Load() == 0 && tp.p.buffered.Load() == 0 })
		})
	}
}
