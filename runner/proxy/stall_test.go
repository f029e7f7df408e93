package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// clientTimeout is the ClientTimeout of the stall tests: short, so that
// they run quickly, long enough that a loaded machine does not pass it
// between two writes of a client that does send.
const clientTimeout = 300 * time.Millisecond

// withClientTimeout sets tp's ClientTimeout (and its server's) to d.
func withClientTimeout(d time.Duration) func(*testProxy) {
	return func(tp *testProxy) {
		tp.p.opts.ClientTimeout = d
		tp.srv.WriteIdleTimeout = d
	}
}

// bodyUpstream reads each request's body to its end and answers its
// length; it counts the requests that came, and those whose body broke
// off.
func bodyUpstream(t *testing.T) (url string, came, broke *atomic.Int64) {
	came, broke = new(atomic.Int64), new(atomic.Int64)
	srv := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		came.Add(1)
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			broke.Add(1)
			return
		}
		io.WriteString(w, strconv.FormatInt(n, 10))
	})
	return srv.URL, came, broke
}

// A client that stops sending its request's body holds its -j slot (and
// its admission) for at most ClientTimeout: then the request is
// abandoned, its upstream request cancelled, the client answered 408 with
// the connection closed, and a request behind it goes. One admitted is
// told as failed, saying why; one that had not been admitted (its body
// short enough to be read before the wait, or not begun) spends nothing.
// Before, each held its slot until the client left, and -j such clients
// starved every other.
func TestStalledBodyIsCutOffAndFreesItsSlot(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	for _, tc := range []struct {
		name, head string
		sent       bool // admitted and sent upstream before the stall
	}{
		{"long, mid-body", "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + long, true},
		{"long chunked, mid-body", "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n19000\r\n" + long + "\r\n10\r\nabc", true},
		{"100-continue, no body", "POST /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", true},
		{"long, not begun", "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n", false},
		{"short, in part", "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, came, broke := bodyUpstream(t)
			tp := startProxy(t, url, "", 1, nil, withClientTimeout(clientTimeout))
			c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			io.WriteString(c, tc.head) // and nothing more
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			for err == nil && resp.StatusCode == http.StatusContinue {
				resp, err = http.ReadResponse(br, nil)
			}
			if err != nil {
				t.Fatalf("the stalled client's answer: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !resp.Close || !strings.Contains(string(b), "--client-timeout") {
				t.Errorf("the stalled client got %d %q (close %v), want 408 saying why, the connection closed", resp.StatusCode, b, resp.Close)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after the 408: %v, want the connection closed", err)
			}
			tp.stillServes(t) // -j 1: the slot is free
			st := tp.p.Stats()
			if !tc.sent {
				if came.Load() != 0 || st.Stalled != 1 || st.Failed != 0 {
					t.Errorf("not admitted: the upstream got %d requests, Stats %+v; want none, Stalled 1", came.Load(), st)
				}
				if evs := tp.doneN(t, 1); len(evs) != 1 {
					t.Errorf("events %+v, want /ok's only", evs)
				}
				return
			}
			eventually(t, "the upstream's request cancelled", func() bool { return broke.Load() == 1 })
			if st.Stalled != 0 || st.Failed != 1 {
				t.Errorf("Stats %+v, want Failed 1", st)
			}
			up := tp.resultOf(t, "the stalled request reported", url+"/up")
			if up.OK() || up.ExitCode != -1 || !errors.Is(up.Err, errBodyStalled) || up.HTTP.Conn != "" ||
				!strings.Contains(up.Err.Error(), "no byte of it came for 300ms") {
				t.Errorf("the stalled request's result: exit %d, %v, conn %q; want failed, the body stalled", up.ExitCode, up.Err, up.HTTP.Conn)
			}
		})
	}
}

// A body that comes slowly but steadily, each byte within ClientTimeout
// of the last though the whole takes far longer, is never cut off.
func TestSlowSteadyUploadIsNotCutOff(t *testing.T) {
	url, _, broke := bodyUpstream(t)
	tp := startProxy(t, url, "", 1, nil, withClientTimeout(clientTimeout))
	for _, head := range []string{
		"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 80020\r\n\r\n" + strings.Repeat("x", 80000),
		"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n",
	} {
		c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		io.WriteString(c, head)
		for range 20 { // a byte every 60ms: 1.2s in all, 4 timeouts
			time.Sleep(60 * time.Millisecond)
			io.WriteString(c, "y")
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		c.Close()
		want := strings.TrimPrefix(head[strings.Index(head, "Length: ")+8:strings.Index(head, "\r\n\r\n")], "")
		if resp.StatusCode != 200 || string(b) != want {
			t.Errorf("a slow upload: %d %q, want 200 %q", resp.StatusCode, b, want)
		}
	}
	if broke.Load() != 0 || tp.p.Stats().Stalled != 0 {
		t.Errorf("%d bodies broke off upstream, Stats %+v; want none", broke.Load(), tp.p.Stats())
	}
}

// A client that stops reading its answer holds its slot for at most
// ClientTimeout: then its connection is closed, the upstream's request
// cancelled, and the request told as failed, saying why; a request behind
// it goes. On both paths: a GET (the bodiless path) and a POST
// (ReverseProxy).
func TestClientThatStopsReadingFreesItsSlot(t *testing.T) {
	for _, method := range []string{"GET", "POST"} {
		t.Run(method, func(t *testing.T) {
			upstreamGone := make(chan struct{})
			chunk := strings.Repeat("z", 32<<10)
			up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				for {
					if _, err := io.WriteString(w, chunk); err != nil {
						close(upstreamGone)
						return
					}
				}
			})
			tp := startProxy(t, up.URL, "", 1, nil, withClientTimeout(clientTimeout))
			c, err := net.Dial("tcp", strings.TrimPrefix(tp.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.(*net.TCPConn).SetReadBuffer(4 << 10)
			head := method + " /endless HTTP/1.1\r\nHost: x\r\n\r\n"
			if method == "POST" {
				head = "POST /endless HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"
			}
			io.WriteString(c, head) // and read nothing
			tp.stillServes(t)       // -j 1: once the stalled request's slot is free
			select {
			case <-upstreamGone:
			case <-time.After(10 * time.Second):
				t.Error("the upstream still writes 10s after the client stopped reading")
			}
			endless := tp.resultOf(t, "the stalled request reported", up.URL+"/endless")
			if endless.OK() || !errors.Is(endless.Err, errAnswerStalled) || endless.HTTP.StatusCode != 200 {
				t.Errorf("the stalled request's result: exit %d, %v; want failed, the answer stalled", endless.ExitCode, endless.Err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tp.p.Wait(ctx); err != nil { // the handler returned
				t.Error(err)
			}
		})
	}
}
