package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/tcptest"
)

// An upstream that takes none of a request's body is one that does not
// answer: with Options.Timeout the request is cancelled once it has taken
// no byte for that long, answered 504, its slot given back and its result
// failed. (http.Transport's ResponseHeaderTimeout counts only once the
// body has been written: the request held its slot for as long as the
// client waited, and on after it left.)
func TestUpstreamThatReadsNoBodyIs504(t *testing.T) {
	up := "http://" + tcptest.Serve(t, func(net.Conn) {
		<-t.Context().Done() // read nothing; keep it open until the test ends
	})
	tp := startProxy(t, up, "1000/s", 1, nil, func(tp *testProxy) { tp.p.opts.Timeout = 300 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	body := io.LimitReader(neverEnding('x'), 64<<20) // more than any socket holds
	req, _ := http.NewRequestWithContext(ctx, "POST", tp.url+"/upload", body)
	req.ContentLength = 64 << 20
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusGatewayTimeout {
			t.Errorf("POST to an upstream that reads nothing: %d %q, want 504", resp.StatusCode, b)
		}
	} else if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("POST to an upstream that reads nothing: no answer in %v (the client gave up)", time.Since(start).Round(time.Millisecond))
	}
	// Answered, or the connection closed on a client still sending: the
	// slot comes back either way, and the request failed for want of an
	// answer in time.
	eventually(t, "the slot given back", func() bool { st := tp.p.Stats(); return st.InFlight == 0 && len(tp.p.slots) == 0 })
	res := tp.resultOf(t, "the upload's result", up+"/upload")
	if res.OK() || res.Err == nil || !strings.Contains(res.Err.Error(), "in time") {
		t.Errorf("the upload's result: ok %v, err %v; want failed, not answered in time", res.OK(), res.Err)
	}
}

// neverEnding is an endless run of one byte.
type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// A client that sends its body slowly, and an upstream that takes each
// byte as it comes, is not cut off by Options.Timeout: the waits are the
// client's.
func TestSlowUploadToAReadingUpstreamIsNotCutOff(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	}))
	defer up.Close()
	tp := startProxy(t, up.URL, "1000/s", 1, nil, func(tp *testProxy) { tp.p.opts.Timeout = 200 * time.Millisecond })
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < 8; i++ {
			pw.Write([]byte("x"))
			time.Sleep(100 * time.Millisecond)
		}
		pw.Close()
	}()
	resp, err := http.Post(tp.url+"/up", "text/plain", pr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "8" {
		t.Errorf("slow upload = %d %q, want 200 \"8\"", resp.StatusCode, b)
	}
}

// A request with Expect: 100-continue to an upstream that never answers
// 100 (it reads the body when it comes) has its body sent once the
// transport's own wait for 100 is over: not cut off by an
// Options.Timeout shorter than that wait.
func TestExpectContinueToAnUpstreamWithoutOneIsNotCutOff(t *testing.T) {
	up := "http://" + tcptest.Serve(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		n, _ := io.Copy(io.Discard, req.Body)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%d", len(strconv.FormatInt(n, 10)), n)
	})
	tp := startProxy(t, up, "1000/s", 1, nil, func(tp *testProxy) { tp.p.opts.Timeout = 200 * time.Millisecond })
	req, _ := http.NewRequest("POST", tp.url+"/up", strings.NewReader(strings.Repeat("y", 100<<10)))
	req.Header.Set("Expect", "100-continue")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := strconv.Itoa(100 << 10); resp.StatusCode != 200 || string(b) != want {
		t.Errorf("Expect: 100-continue upload = %d %q, want 200 %q", resp.StatusCode, b, want)
	}
}
