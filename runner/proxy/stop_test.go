package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Stop answers 503 to every request still waiting for its admission, and
// to every later one, sends none of them upstream, and leaves the
// requests served before it alone.
func TestStopEndsTheWaitingRequests(t *testing.T) {
	var got atomic.Int64
	up := okUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		fmt.Fprintln(w, r.URL.Path)
	})
	tp := startProxy(t, up.URL, "1/h", 0, nil)
	if code, body := tp.get(t, "/first"); code != 200 {
		t.Fatalf("GET /first = %d %q, want 200", code, body)
	}
	const n = 5
	type answer struct {
		code int
		body string
	}
	answers := make(chan answer, n)
	for i := range n {
		go func() { // not tp.get: it fails the test, which a goroutine must not
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/waits%d", tp.url, i), nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- answer{0, err.Error()}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- answer{resp.StatusCode, string(b)}
		}()
	}
	eventually(t, fmt.Sprintf("%d requests waiting", n), func() bool { return tp.p.waitingN.Load() == n })
	tp.p.Stop()
	for range n {
		a := <-answers
		if a.code != http.StatusServiceUnavailable || !strings.Contains(a.body, "stopping; this request was not sent upstream") {
			t.Errorf("a request waiting at Stop got %d %q, want 503 (stopping, not sent)", a.code, a.body)
		}
	}
	if code, body := tp.get(t, "/after"); code != http.StatusServiceUnavailable || !strings.Contains(body, "stopping") {
		t.Errorf("GET /after after Stop = %d %q, want 503 (stopping)", code, body)
	}
	if g := got.Load(); g != 1 {
		t.Errorf("the upstream got %d requests, want 1 (the one before Stop)", g)
	}
	tp.p.Stop() // twice: nothing more to do
}

// stopList links and unlinks requests in any order, and close returns
// those still in it and refuses later ones.
func TestStopList(t *testing.T) {
	var l stopList
	rqs := make([]*request, 5)
	for i := range rqs {
		rqs[i] = &request{}
		if !l.add(rqs[i]) {
			t.Fatalf("add(%d) = false on an open list", i)
		}
	}
	l.remove(rqs[4]) // the head
	l.remove(rqs[0]) // the tail
	l.remove(rqs[2]) // in the middle
	left := l.close()
	if len(left) != 2 || left[0] != rqs[3] || left[1] != rqs[1] {
		t.Errorf("close() returned %d requests, want rqs[3] and rqs[1]", len(left))
	}
	l.remove(rqs[1]) // removed after close, as a request ends
	if l.add(&request{}) {
		t.Error("add after close = true, want false")
	}
	if left := l.close(); len(left) != 1 || left[0] != rqs[3] {
		t.Errorf("close() again returned %d requests, want rqs[3]", len(left))
	}
}
