package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// holdUpstream answers /hold once release is called (or the test ends),
// counts the requests with a body it receives, and answers the others
// with the length of their body.
func holdUpstream(t *testing.T) (url string, release func(), bodied *atomic.Int64) {
	held, bodied := make(chan struct{}), new(atomic.Int64)
	release = sync.OnceFunc(func() { close(held) })
	srv := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-held
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		if n > 0 {
			bodied.Add(1)
		}
		io.WriteString(w, strconv.FormatInt(n, 10))
	})
	t.Cleanup(release) // before srv.Close, which waits for /hold
	return srv.URL, release, bodied
}

// waitBehindHeld has a GET of /hold take tp's only slot (held is closed
// once it is answered), then sends head on a connection of its own and
// returns that connection once its request waits for the slot.
func waitBehindHeld(t *testing.T, tp *testProxy, head string) (c net.Conn, held <-chan struct{}) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.Get(tp.url + "/hold"); err == nil {
			resp.Body.Close()
		}
	}()
	eventually(t, "the slot held", func() bool { return tp.p.Stats().InFlight == 1 })
	c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, head)
	eventually(t, "the request waiting", func() bool { return tp.p.Stats().Waiting == 1 })
	return c, done
}

// closeSeenGone closes c, a client's connection whose request waits
// behind the held slot, and checks that the proxy sees the client gone,
// serves on once the slot is released, and sends nothing upstream.
func closeSeenGone(t *testing.T, tp *testProxy, c net.Conn, release func(), held <-chan struct{}, bodied *atomic.Int64) {
	t.Helper()
	c.Close()
	eventually(t, "the client seen gone", func() bool { return tp.p.Stats().Gone == 1 })
	release()
	<-held
	tp.stillServes(t)
	if n := bodied.Load(); n != 0 {
		t.Errorf("the upstream received %d requests with a body, want 0: the client had gone", n)
	}
}

// A client that sends a body and closes its connection (or resets it)
// while the request waits for a -j slot is seen gone: its request is never
// sent. A small body (with a length, or chunked) is read before the wait,
// and net/http sees the close; a long one, one sent in part, or one that
// waits for 100 Continue is not read, and the proxy looks at the socket.
func TestBodiedClientGoneWhileWaitingForASlotSpendsNothing(t *testing.T) {
	long := strings.Repeat("x", 2000)
	for _, tc := range []struct {
		name, head string
		reset      bool
	}{
		{"POST", "POST /gone HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", false},
		{"PUT chunked", "PUT /gone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", false},
		{"long, in part", "POST /gone HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n" + long, false},
		{"long, in part, reset", "POST /gone HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n" + long, true},
		{"long chunked, in part", "PUT /gone HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n11000\r\n" + strings.Repeat("x", 0x11000) + "\r\n100\r\n" + long[:100], false},
		{"100-continue", "POST /gone HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", false},
	} {
		head := tc.head
		t.Run(tc.name, func(t *testing.T) {
			url, release, bodied := holdUpstream(t)
			tp := startProxy(t, url, "", 1, nil)
			c, held := waitBehindHeld(t, tp, head)
			if tc.reset {
				c.(*net.TCPConn).SetLinger(0)
			}
			closeSeenGone(t, tp, c, release, held, bodied)
		})
	}
}

// A body too long to be read before the wait streams upstream as it
// comes: the upstream has its first bytes before the client sends the
// rest. A short one arrives whole.
func TestBodiesGoUpstreamWholeAndLongOnesStream(t *testing.T) {
	const first = maxBufferedBody + 1000
	got := make(chan struct{}, 1)
	srv := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.CopyN(io.Discard, r.Body, first)
		if n == first {
			got <- struct{}{}
		}
		m, _ := io.Copy(io.Discard, r.Body)
		io.WriteString(w, strconv.FormatInt(n+m, 10))
	})
	tp := startProxy(t, srv.URL, "", 0, nil)
	for _, tc := range []struct {
		name    string
		length  int64 // -1: chunked
		partial bool  // the client waits for the upstream before sending the rest
	}{
		{"short", 20, false},
		{"short chunked", -1, false},
		{"long", 3 * maxBufferedBody, true},
		{"long chunked", -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, pw := io.Pipe()
			req, _ := http.NewRequest("POST", tp.url+"/up", pr)
			want := int64(20)
			if tc.partial {
				want = 3 * maxBufferedBody
			}
			if tc.length >= 0 {
				req.ContentLength = tc.length
			}
			var wg sync.WaitGroup
			wg.Go(func() {
				defer pw.Close()
				if !tc.partial {
					pw.Write(make([]byte, want))
					return
				}
				pw.Write(make([]byte, first))
				select {
				case <-got:
				case <-time.After(10 * time.Second):
					pw.CloseWithError(io.ErrUnexpectedEOF)
					t.Error("the upstream did not get the body's first bytes before its end was sent: the proxy held it")
					return
				}
				pw.Write(make([]byte, want-first))
			})
			resp, err := http.DefaultClient.Do(req)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != strconv.FormatInt(want, 10) {
				t.Errorf("the upstream read %s bytes, want %d", b, want)
			}
		})
	}
}

// A request with Expect: 100-continue gets no 100 Continue while it
// waits: its body is not read before the admission.
func TestExpectContinueIsNotAnsweredBeforeTheAdmission(t *testing.T) {
	url, release, _ := holdUpstream(t)
	tp := startProxy(t, url, "", 1, nil)
	c, held := waitBehindHeld(t, tp, "POST /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if b, err := c.Read(make([]byte, 64)); err == nil || b > 0 {
		t.Fatalf("the client got %d bytes while its request waited for the slot, want none", b)
	}
	release()
	<-held
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	cont, err := http.ReadResponse(br, nil)
	if err != nil || cont.StatusCode != http.StatusContinue {
		t.Fatalf("after the admission: %v %v, want 100 Continue", cont, err)
	}
	io.WriteString(c, "hello")
	// The upstream's own 100 Continue may follow the proxy's: a client
	// reads past any number of 1xx answers (RFC 9110 15.2).
	var resp *http.Response
	for resp == nil || resp.StatusCode == http.StatusContinue {
		if resp, err = http.ReadResponse(br, nil); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "5" {
		t.Errorf("answer %d %q, want 200 \"5\"", resp.StatusCode, b)
	}
}
