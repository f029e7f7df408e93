package pacehttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// hangUpServer answers requests on loopback, except the second request
// on the first connection: it reads it, then hangs up without answering,
// so that net/http's Transport sends the GET again on a new connection.
// It returns its address and the number of requests it has read.
func hangUpServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var read, conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			first := conns.Add(1) == 1
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for k := 0; ; k++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					read.Add(1)
					if first && k == 1 {
						return
					}
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			}()
		}
	}()
	return ln.Addr().String(), &read
}

// net/http sends a GET again when a kept-alive connection fails after the
// request was written: the server read it, so the second attempt is a
// call of its own, admitted under the rules. Before, the server read
// three requests for two admissions.
func TestResentRequestIsAdmitted(t *testing.T) {
	addr, read := hangUpServer(t)
	lim := newLimiter(t, []throttle.Rule{{N: 5, Window: time.Minute}}, 0)
	c := &http.Client{Transport: New(lim, Options{Base: &http.Transport{}})}
	var infos [2]Info
	for i := range 2 {
		req, _ := http.NewRequestWithContext(WithInfo(context.Background(), &infos[i]), http.MethodGet, "http://"+addr+"/x", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// The resent attempt is in Info.Hops, so that a job log keeps it.
	if h := infos[1].Hops; len(infos[0].Hops) != 0 || len(h) != 1 || !h[0].Again || h[0].Method != "GET" || h[0].URL.Path != "/x" ||
		h[0].Cost != 1 || h[0].At.Before(infos[1].Admission.At) || h[0].Ended.Before(h[0].At) {
		t.Errorf("hops %+v, then %+v; want none, then the GET /x sent again, after the request's admission", infos[0].Hops, h)
	}
	s := lim.Stats()
	if got := read.Load(); got != 3 || s.Admitted != 3 {
		t.Errorf("the server read %d requests for %d admissions, want 3 and 3 (the resent GET admitted)", got, s.Admitted)
	}
	if s.InFlight != 0 {
		t.Errorf("InFlight = %d after every body was closed", s.InFlight)
	}
}

// When the resent attempt cannot be admitted (its context ends while it
// waits for the rules), nothing is written: RoundTrip fails with the
// admission's error.
func TestResentRequestNotAdmittedIsNotSent(t *testing.T) {
	addr, read := hangUpServer(t)
	lim := newLimiter(t, []throttle.Rule{{N: 2, Window: time.Minute}}, 0)
	c := &http.Client{Transport: New(lim, Options{Base: &http.Transport{}})}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the second GET succeeded: its resent attempt was sent without room under 2/m")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the second GET failed with %v, want the admission's DeadlineExceeded", err)
	}
	time.Sleep(100 * time.Millisecond) // a write that should not happen would have landed by now
	if got, adm := read.Load(), lim.Stats().Admitted; got != 2 || adm != 2 {
		t.Errorf("the server read %d requests for %d admissions, want 2 and 2", got, adm)
	}
}

// A base that returns a response without a body, or neither a response
// nor an error, is a broken RoundTripper; http.Client copes with both, and
// so must the Transport: no panic, no slot kept.
func TestBrokenBase(t *testing.T) {
	lim := newLimiter(t, nil, 1)
	noBody := New(lim, Options{Base: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Request: req}, nil
	})})
	resp, err := (&http.Client{Transport: noBody}).Get("http://api.example/")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(resp.Body); err != nil || len(b) != 0 {
		t.Errorf("a response without a body read %q, %v; want empty", b, err)
	}
	resp.Body.Close()
	nothing := New(lim, Options{Base: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil })})
	if _, err := nothing.RoundTrip(mustRequest(t, "http://api.example/")); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("a base returning nil, nil gave %v, want an error saying so", err)
	}
	if n := lim.Stats().InFlight; n != 0 {
		t.Errorf("InFlight = %d, want every slot back", n)
	}
}

// A body may be closed from another goroutine while one reads it (as
// net/http's bodies may): reading the cost from a JSON body must not race
// with it (go test -race).
func TestBodyCloseWhileReading(t *testing.T) {
	lim := newLimiter(t, []throttle.Rule{{N: 100, Window: time.Second, Cost: true}}, 0)
	cs, err := ParseCostSource("json:usage")
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	tr := New(lim, Options{CostFrom: cs, Base: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: pr, Request: req}, nil
	})})
	resp, err := tr.RoundTrip(mustRequest(t, "http://api.example/"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		b := make([]byte, 1)
		for {
			if _, err := resp.Body.Read(b); err != nil {
				return
			}
		}
	})
	written := make(chan struct{})
	wg.Go(func() {
		for i := range 10000 {
			if i == 100 {
				close(written)
			}
			if _, err := pw.Write([]byte(" ")); err != nil {
				return
			}
		}
	})
	<-written // the reader is reading
	resp.Body.Close()
	pw.CloseWithError(io.ErrClosedPipe)
	wg.Wait()
	if n := lim.Stats().InFlight; n != 0 {
		t.Errorf("InFlight = %d after Close, want 0", n)
	}
}

func mustRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// twiceBase makes two attempts at every request, telling the trace of
// each connection, as net/http's Transport does when it sends a request
// again; once says what its SendsOnce answers.
type twiceBase struct{ once bool }

func (b twiceBase) SendsOnce(*http.Request) bool { return b.once }

func (b twiceBase) RoundTrip(req *http.Request) (*http.Response, error) {
	if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.GotConn != nil {
		tr.GotConn(httptrace.GotConnInfo{})
		tr.GotConn(httptrace.GotConnInfo{Reused: true})
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}

// A base whose SendsOnce says true (pace's direct transport, which sends
// again only what never reached the server) is not watched: its second
// connection costs no admission. One that says false is.
func TestSendsOnceBaseIsNotWatched(t *testing.T) {
	for _, once := range []bool{true, false} {
		lim := newLimiter(t, []throttle.Rule{{N: 10, Window: time.Minute}}, 0)
		tr := New(lim, Options{Base: twiceBase{once}})
		resp, err := tr.RoundTrip(mustRequest(t, "http://api.example/"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := int64(2)
		if once {
			want = 1
		}
		if got := lim.Stats().Admitted; got != want {
			t.Errorf("SendsOnce %v: %d admissions for two attempts, want %d", once, got, want)
		}
	}
}
