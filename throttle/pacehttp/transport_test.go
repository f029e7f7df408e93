package pacehttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// client returns a client whose transport admits through b and answers
// every request with answer.
func client(b throttle.Backend, opts Options, answer func(*http.Request) *http.Response) (*http.Client, *Transport) {
	opts.Base = roundTripFunc(func(req *http.Request) (*http.Response, error) { return answer(req), nil })
	tr := New(b, opts)
	return &http.Client{Transport: tr}, tr
}

func newLimiter(t *testing.T, rules []throttle.Rule, maxInFlight int) *throttle.Limiter {
	t.Helper()
	l, err := throttle.New(throttle.Options{Rules: rules, MaxInFlight: maxInFlight})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A request holds its admission's slot until its body is closed or read
// to its end: under a cap of one, the second request waits for it.
func TestTransportHoldsSlotUntilBodyEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := newLimiter(t, nil, 1)
		c, _ := client(lim, Options{}, func(req *http.Request) *http.Response { return response(req, 200) })
		first, err := c.Get("http://api.example/1")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan struct{})
		go func() {
			resp, err := c.Get("http://api.example/2")
			if err == nil {
				resp.Body.Close()
			}
			close(got)
		}()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("second request admitted while the first body is open, under a cap of 1")
		default:
		}
		io.Copy(io.Discard, first.Body) // read to its end: the slot is back
		synctest.Wait()
		select {
		case <-got:
		default:
			t.Fatal("second request still waiting after the first body was read to its end")
		}
		first.Body.Close() // a second release must not free another slot
		if st := lim.Stats(); st.InFlight != 0 {
			t.Errorf("in flight = %d after both requests ended, want 0", st.InFlight)
		}
	})
}

// A response that has no body (to a HEAD, a 204 or 304, a Content-Length
// of 0) ends with its headers: net/http gives its connection back at
// once, closed or not, and the Transport gives its slot back too. It kept
// it until a Close that callers of HEAD often leave out: under a cap of
// one, the next request waited forever. The bodies are as net/http's
// HTTP/1 (http.NoBody) and HTTP/2 (an empty body of its own) transports
// make them.
func TestTransportBodilessResponseFreesSlot(t *testing.T) {
	h2empty := io.NopCloser(strings.NewReader(""))
	for _, tc := range []struct {
		method string
		code   int
		length int64
		body   io.ReadCloser
		proto  string
	}{
		{"HEAD", 200, 100, http.NoBody, "HTTP/1"},
		{"HEAD", 200, 100, h2empty, "HTTP/2"},
		{"GET", 204, 0, http.NoBody, "HTTP/1"},
		{"GET", 304, 0, http.NoBody, "HTTP/1"},
		{"GET", 200, 0, http.NoBody, "HTTP/1"},
		{"GET", 200, 0, h2empty, "HTTP/2"},
	} {
		name := fmt.Sprintf("%s %s %d, Content-Length %d", tc.proto, tc.method, tc.code, tc.length)
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lim := newLimiter(t, nil, 1)
				c, _ := client(lim, Options{}, func(req *http.Request) *http.Response {
					resp := response(req, tc.code)
					resp.ContentLength, resp.Body = tc.length, tc.body
					return resp
				})
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				for i := range 3 {
					req, _ := http.NewRequestWithContext(ctx, tc.method, "http://api.example/", nil)
					if _, err := c.Do(req); err != nil { // the body is never closed
						t.Fatalf("request %d: %v; in flight %d", i, err, lim.Stats().InFlight)
					}
				}
				if st := lim.Stats(); st.InFlight != 0 {
					t.Errorf("in flight = %d, want 0", st.InFlight)
				}
			})
		})
	}
}

// A request that fails in the base transport gives its slot back, and a
// request whose admission fails is never sent.
func TestTransportErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := newLimiter(t, nil, 1)
		tr := New(lim, Options{Base: roundTripFunc(func(*http.Request) (*http.Response, error) {
			return nil, errors.New("connection refused")
		})})
		c := &http.Client{Transport: tr}
		for range 3 {
			if _, err := c.Get("http://api.example/"); err == nil || !strings.Contains(err.Error(), "connection refused") {
				t.Fatalf("Get = %v, want the base transport's error", err)
			}
		}
		sent := false
		c, _ = client(lim, Options{}, func(req *http.Request) *http.Response { sent = true; return response(req, 200) })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.example/", nil)
		if _, err := c.Do(req); !errors.Is(err, context.Canceled) || sent {
			t.Errorf("Do with a cancelled context = %v (sent %v), want context.Canceled and nothing sent", err, sent)
		}
	})
}

// A Transport made with a nil backend, and the zero Transport, work: no
// rules of the caller's, the server's pauses kept. Both panicked (a nil
// backend's Stats in New; every field of the zero value in RoundTrip).
func TestTransportNilBackend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent []time.Time
		c, tr := client(nil, Options{}, func(req *http.Request) *http.Response {
			sent = append(sent, time.Now())
			if len(sent) == 1 {
				return response(req, 429, "Retry-After", "5")
			}
			return response(req, 200)
		})
		for range 2 {
			resp, err := c.Get("http://api.example/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if len(sent) != 2 || sent[1].Sub(sent[0]) != 5*time.Second {
			t.Errorf("sent at %v, want the second 5s after the first (Retry-After: 5)", sent)
		}
		if st := tr.Stats(); st.InFlight != 0 || st.Admitted != 2 {
			t.Errorf("in flight %d, admitted %d; want 0 and 2", st.InFlight, st.Admitted)
		}
	})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer ts.Close()
	var tr Transport
	resp, err := (&http.Client{Transport: &tr}).Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" || tr.Backend() == nil || tr.Stats().InFlight != 0 {
		t.Errorf("zero Transport: body %q, backend %v, in flight %d; want ok, a backend, 0", body, tr.Backend(), tr.Stats().InFlight)
	}
	if rules, _ := tr.Learned(); rules != nil {
		t.Errorf("zero Transport learned %v", rules)
	}
}

// http.Client.CloseIdleConnections reaches the base transport's idle
// connections through the Transport: it did nothing, and a base that
// keeps idle connections without a timeout (a zero http.Transport) kept
// them, and their descriptors, for as long as the server did.
func TestTransportCloseIdleConnections(t *testing.T) {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	var closed sync.WaitGroup
	closed.Add(1)
	ts.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed.Done()
		}
	}
	ts.Start()
	defer ts.Close()
	c := &http.Client{Transport: New(nil, Options{Base: &http.Transport{}})}
	resp, err := c.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.CloseIdleConnections()
	done := make(chan struct{})
	go func() { closed.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle connection is still open 10s after CloseIdleConnections")
	}
}

// The cost from the response corrects the cost counted: from a header at
// once, from a JSON body once it has been read. A response that does not
// tell keeps the estimate, says why in Info, and hints once.
func TestTransportCostFromResponse(t *testing.T) {
	for _, tt := range []struct {
		name    string
		src     string
		header  []string
		body    string
		want    int // the cost counted in the end
		wantErr string
	}{
		{name: "header", src: "header:X-Tokens", header: []string{"X-Tokens", "7"}, body: "{}", want: 7},
		{name: "json", src: "json:usage.total_tokens", body: `{"usage":{"total_tokens":42}}`, want: 42},
		{name: "json missing", src: "json:usage.total_tokens", body: `{"other":1}`, want: 10, wantErr: "the body has no usage.total_tokens"},
		{name: "not json", src: "json:usage.total_tokens", body: `oops`, want: 10, wantErr: "not JSON"},
		{name: "header missing", src: "header:X-Tokens", body: "{}", want: 10, wantErr: "no X-Tokens header"},
		// A cost past int64 is a whole number too: it counts as
		// throttle.MaxLimit, as one within int64 does, instead of being
		// refused as "not a whole number" and the estimate kept.
		{name: "header huge", src: "header:X-Tokens", header: []string{"X-Tokens", "1099511627777"}, body: "{}", want: throttle.MaxLimit},
		{name: "header past int64", src: "header:X-Tokens", header: []string{"X-Tokens", "99999999999999999999"}, body: "{}", want: throttle.MaxLimit},
		{name: "json past int64", src: "json:usage.total_tokens", body: `{"usage":{"total_tokens":99999999999999999999}}`, want: throttle.MaxLimit},
		{name: "header negative", src: "header:X-Tokens", header: []string{"X-Tokens", "-3"}, body: "{}", want: 10, wantErr: "not a whole number"},
		{name: "json fraction", src: "json:usage.total_tokens", body: `{"usage":{"total_tokens":1.5}}`, want: 10, wantErr: "not a whole number"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src, err := ParseCostSource(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			lim := newLimiter(t, []throttle.Rule{{N: 1000, Window: time.Second, Cost: true}}, 0)
			var hints []string
			var mu sync.Mutex
			c, _ := client(lim, Options{
				CostFrom: src,
				Cost:     func(*http.Request) (int, error) { return 10, nil },
				Hint:     func(s string) { mu.Lock(); hints = append(hints, s); mu.Unlock() },
			}, func(req *http.Request) *http.Response {
				resp := response(req, 200, tt.header...)
				resp.Body = io.NopCloser(strings.NewReader(tt.body))
				return resp
			})
			for range 2 {
				info := &Info{}
				req, _ := http.NewRequestWithContext(WithInfo(context.Background(), info), "POST", "http://api.example/", nil)
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if got := info.Admission.Cost; got != tt.want {
					t.Errorf("cost counted = %d, want %d", got, tt.want)
				}
				if tt.wantErr == "" && info.CostErr != nil || tt.wantErr != "" && (info.CostErr == nil || !strings.Contains(info.CostErr.Error(), tt.wantErr)) {
					t.Errorf("Info.CostErr = %v, want %q", info.CostErr, tt.wantErr)
				}
			}
			if wantHints := min(len(tt.wantErr), 1); len(hints) != wantHints {
				t.Errorf("hints = %q, want %d", hints, wantHints)
			}
		})
	}
}

// A server that tells a different garbled cost with every answer (or
// none) is hinted at once, as the hint says: not once per value, which
// put a line on pace fetch's stderr for every response.
func TestTransportCostHintOnce(t *testing.T) {
	src, err := ParseCostSource("header:X-Tokens")
	if err != nil {
		t.Fatal(err)
	}
	lim := newLimiter(t, []throttle.Rule{{N: 1000, Window: time.Second, Cost: true}}, 0)
	var hints []string
	i := 0
	c, _ := client(lim, Options{CostFrom: src, Hint: func(s string) { hints = append(hints, s) }},
		func(req *http.Request) *http.Response {
			i++
			if i%5 == 0 {
				return response(req, 200)
			}
			return response(req, 200, "X-Tokens", fmt.Sprintf("x%d", i))
		})
	for range 20 {
		resp, err := c.Get("http://api.example/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(hints) != 1 || !strings.Contains(hints[0], `"x1"`) {
		t.Errorf("hints = %q, want one, about the first answer", hints)
	}
}

// A request admitted by its caller (Info.Admission set) is not admitted
// again nor released by the transport. Each redirect it follows reaches
// the server as a call of its own and is admitted under the rules, on the
// caller's slot: under a cap of one it waits for no other slot (it would
// wait forever), and under 1 per hour it waits the hour.
func TestTransportAdmitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := newLimiter(t, []throttle.Rule{{N: 1, Window: time.Hour}}, 1)
		var sent []time.Time
		c, _ := client(lim, Options{}, func(req *http.Request) *http.Response {
			sent = append(sent, time.Now())
			if req.URL.Path == "/from" {
				return response(req, http.StatusFound, "Location", "/to")
			}
			return response(req, 200)
		})
		a, err := lim.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		info := &Info{Admission: a}
		req, _ := http.NewRequestWithContext(WithInfo(context.Background(), info), "GET", "http://api.example/from", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if info.Admission != a || resp.StatusCode != 200 {
			t.Errorf("status %d, admission %+v; want 200 under the caller's %+v", resp.StatusCode, info.Admission, a)
		}
		if len(sent) != 2 || sent[0] != start || sent[1].Sub(start) < time.Hour {
			t.Errorf("sent at %v from %v; want the request at once and its redirect an hour later", sent, start)
		}
		// The redirect's call is in Info.Hops, for a record of the calls
		// made (a job log).
		if h := info.Hops; len(h) != 1 || h[0].Again || h[0].Method != "GET" || h[0].URL.Path != "/to" || h[0].Cost != 1 ||
			len(sent) != 2 || !h[0].At.Equal(sent[1]) || !h[0].Ended.Equal(sent[1]) {
			t.Errorf("Info.Hops = %+v; want the GET /to, admitted and ended when it was sent (%v)", h, sent)
		}
		if st := lim.Stats(); st.InFlight != 1 {
			t.Errorf("in flight = %d, want 1: the caller's admission is the caller's to release, the redirect held no slot", st.InFlight)
		}
		a.Release()
		if st := lim.Stats(); st.InFlight != 0 {
			t.Errorf("in flight = %d after the release, want 0", st.InFlight)
		}
	})
}

// With CostFrom, a redirected request that its caller admitted still has
// the caller's admission in Info.Admission once the cost is read: the
// transport corrected the redirect's own admission and put it there, so a
// caller that corrected and released Info.Admission, as its doc says,
// corrected the redirect's call again (its own kept the estimate) and
// released nothing (its slot stayed held).
func TestTransportAdmittedRedirectKeepsCallersAdmission(t *testing.T) {
	for _, src := range []string{"header:X-Tokens", "json:usage"} {
		t.Run(src, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cs, _ := ParseCostSource(src)
				lim := newLimiter(t, []throttle.Rule{{N: 100, Window: time.Hour, Cost: true}}, 1)
				c, _ := client(lim, Options{CostFrom: cs}, func(req *http.Request) *http.Response {
					if req.URL.Path == "/from" {
						return response(req, http.StatusFound, "Location", "/to")
					}
					resp := response(req, 200, "X-Tokens", "7")
					resp.Body = io.NopCloser(strings.NewReader(`{"usage":7}`))
					return resp
				})
				a, err := lim.Admit(context.Background(), 10)
				if err != nil {
					t.Fatal(err)
				}
				info := &Info{Admission: a}
				req, _ := http.NewRequestWithContext(WithInfo(context.Background(), info), "GET", "http://api.example/from", nil)
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if info.Admission != a || info.Cost != 7 {
					t.Errorf("Info.Admission %+v, Cost %d; want the caller's %+v, and 7", info.Admission, info.Cost, a)
				}
				if err := info.Admission.Correct(context.Background(), info.Cost); err != nil {
					t.Fatal(err)
				}
				info.Admission.Release()
				// The redirect's call corrected to 7, the caller's to 7.
				if st := lim.Stats(); st.InFlight != 0 || st.Rules[0].Used != 14 {
					t.Errorf("in flight %d, cost counted %d; want 0 and 14 (two calls of 7)", st.InFlight, st.Rules[0].Used)
				}
				if len(info.Hops) != 1 || info.Hops[0].Cost != 7 {
					t.Errorf("Info.Hops = %+v; want the redirect's call, of its corrected cost 7", info.Hops)
				}
			})
		})
	}
}

// A refusal asking for a pause longer than MaxServerPause pauses nothing
// and says so; a spent quota on a success pauses for the longest allowed.
func TestTransportPauseBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := newLimiter(t, nil, 0)
		var code int
		var header []string
		c, _ := client(lim, Options{MaxServerPause: time.Minute}, func(req *http.Request) *http.Response { return response(req, code, header...) })
		get := func() *Info {
			info := &Info{}
			req, _ := http.NewRequestWithContext(WithInfo(context.Background(), info), "GET", "http://api.example/", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return info
		}
		code, header = 429, []string{"Retry-After", "3600"}
		info := get()
		var long *PauseTooLong
		if !errors.As(info.PauseErr, &long) || long.Asked != time.Hour || !info.PauseUntil.IsZero() {
			t.Errorf("429 Retry-After 3600: PauseErr %v, PauseUntil %v; want a PauseTooLong of 1h and no pause", info.PauseErr, info.PauseUntil)
		}
		// Retry-After: 0 asks for no wait, but the quota it says is spent
		// for an hour: the server asks for the hour, not pace's backoff
		// (the pause was cut to the longest allowed, and the item retried).
		code, header = 429, []string{"Retry-After", "0", "RateLimit-Remaining", "0", "RateLimit-Reset", "3600"}
		info = get()
		if !errors.As(info.PauseErr, &long) || long.Asked != time.Hour || !info.PauseUntil.IsZero() {
			t.Errorf("429 Retry-After 0, quota spent for an hour: PauseErr %v, PauseUntil %v; want a PauseTooLong of 1h and no pause", info.PauseErr, info.PauseUntil)
		}
		code, header = 200, []string{"RateLimit-Remaining", "0", "RateLimit-Reset", "3600"}
		if info := get(); info.PauseErr != nil || time.Until(info.PauseUntil) != time.Minute {
			t.Errorf("200 quota spent for an hour: PauseErr %v, pause %v; want none and the 1m cap", info.PauseErr, time.Until(info.PauseUntil))
		}
	})
}

// A refusal whose Retry-After is within MaxServerPause, but whose
// rate-limit headers say the quota is spent for longer (GitHub's
// secondary limits: Retry-After 60 and a reset up to an hour away), keeps
// its Retry-After, which is always honoured; only the longer pause is the
// caller's to decide (PauseErr). It paused nothing: every request went at
// once into the refusals.
func TestTransportRefusalKeepsItsRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := newLimiter(t, nil, 0)
		c, _ := client(lim, Options{MaxServerPause: time.Minute}, func(req *http.Request) *http.Response {
			return response(req, 429, "Retry-After", "30", "RateLimit-Remaining", "0", "RateLimit-Reset", "3600")
		})
		info := &Info{}
		req, _ := http.NewRequestWithContext(WithInfo(context.Background(), info), "GET", "http://api.example/", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var long *PauseTooLong
		if !errors.As(info.PauseErr, &long) || long.Asked != time.Hour {
			t.Errorf("PauseErr %v; want a PauseTooLong of 1h", info.PauseErr)
		}
		want := time.Now().Add(30 * time.Second)
		if st := lim.Stats(); !info.PauseUntil.Equal(want) || !st.PausedUntil.Equal(want) || !strings.Contains(info.PauseReason, "Retry-After: 30") {
			t.Errorf("paused until %v (%q), backend until %v; want the Retry-After's %v", info.PauseUntil, info.PauseReason, st.PausedUntil, want)
		}
	})
}

// With CutServerPauses a refusal asking for more than MaxServerPause
// pauses for MaxServerPause (a proxy cannot fail the request itself, and
// the server's "stop" must not vanish), and still says what it asked.
func TestTransportCutServerPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := newLimiter(t, nil, 0)
		var paused []time.Duration
		c, _ := client(lim, Options{MaxServerPause: time.Minute, CutServerPauses: true,
			OnPause: func(d time.Duration, reason string) { paused = append(paused, d) }},
			func(req *http.Request) *http.Response { return response(req, 429, "Retry-After", "3600") })
		info := &Info{}
		req, _ := http.NewRequestWithContext(WithInfo(context.Background(), info), "GET", "http://api.example/", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var long *PauseTooLong
		if !errors.As(info.PauseErr, &long) || long.Asked != time.Hour {
			t.Errorf("PauseErr %v; want a PauseTooLong of 1h", info.PauseErr)
		}
		if got := time.Until(info.PauseUntil); got != time.Minute || len(paused) != 1 || paused[0] != time.Minute {
			t.Errorf("paused %v (announced %v); want the 1m cap", got, paused)
		}
		if !strings.Contains(info.PauseReason, "cut to 1m0s") {
			t.Errorf("reason %q; want it to say the pause was cut", info.PauseReason)
		}
	})
}

// The margin learns from when the answers came: a request answered late
// may have been read late by a busy server, and one on a new connection
// accepted late, which the client cannot see; the margin covers both (a
// Redis fleet and pace proxy's clients under load were refused while it
// trusted a request to arrive within 10ms of its write).
func TestTransportMarginFromAnswers(t *testing.T) {
	// answer is how one call was answered: gap after it was written, on
	// a connection opened for it if newConn.
	type answer struct {
		gap     time.Duration
		newConn bool
		remote  bool // a server elsewhere
	}
	for _, tt := range []struct {
		name  string
		calls []answer
		want  time.Duration
	}{
		{"answered at once", []answer{{0, true, false}, {0, false, false}}, DefaultMargin},
		{"one answer 40ms late", []answer{{0, true, false}, {40 * time.Millisecond, false, false}}, 40 * time.Millisecond},
		{"a slow server", []answer{{30 * time.Millisecond, false, false}, {30 * time.Millisecond, false, false}}, DefaultMargin},
		{"a slow server, a new connection", []answer{{30 * time.Millisecond, false, false}, {45 * time.Millisecond, true, false}}, 45 * time.Millisecond},
		// A server elsewhere reads on its own CPUs: a late answer is its
		// work, and the floor stands.
		{"elsewhere, one answer 40ms late", []answer{{0, true, true}, {40 * time.Millisecond, false, true}}, DefaultMargin},
	} {
		synctest.Test(t, func(t *testing.T) {
			lim := newLimiter(t, []throttle.Rule{{N: 1, Window: 100 * time.Millisecond}}, 0)
			i := 0
			base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				call := tt.calls[i]
				i++
				trace := httptrace.ContextClientTrace(req.Context())
				ip := net.IPv4(127, 0, 0, 1)
				if call.remote {
					ip = net.IPv4(192, 0, 2, 1)
				}
				trace.GotConn(httptrace.GotConnInfo{Conn: addrConn{&net.TCPAddr{IP: ip, Port: 80}}, Reused: !call.newConn})
				trace.WroteRequest(httptrace.WroteRequestInfo{})
				time.Sleep(call.gap)
				return response(req, 200), nil
			})
			c := &http.Client{Transport: New(lim, Options{Base: base})}
			for range tt.calls {
				resp, err := c.Get("http://api.example/")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			if got := lim.Stats().Margin; got != tt.want {
				t.Errorf("%s: margin %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

// addrConn is a connection that only tells its remote address.
type addrConn struct{ remote net.Addr }

func (c addrConn) RemoteAddr() net.Addr           { return c.remote }
func (addrConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (addrConn) Write(b []byte) (int, error)      { return len(b), nil }
func (addrConn) Close() error                     { return nil }
func (addrConn) LocalAddr() net.Addr              { return nil }
func (addrConn) SetDeadline(time.Time) error      { return nil }
func (addrConn) SetReadDeadline(time.Time) error  { return nil }
func (addrConn) SetWriteDeadline(time.Time) error { return nil }

// sendsOnceFunc is a base that promises to send each request once.
type sendsOnceFunc func(*http.Request) (*http.Response, error)

func (f sendsOnceFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
func (sendsOnceFunc) SendsOnce(*http.Request) bool                          { return true }

// A request under WithInfo (as pace proxy sends them) feeds the margin
// and its Info from the one trace WithInfo set: its first attempt's
// write is stamped by it, so the base gets the caller's context as it
// is, without a second trace composed onto it (httptrace's reflective
// compose, allocations for each request).
func TestTransportMarginFromAnswersWithInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := newLimiter(t, []throttle.Rule{{N: 1, Window: 100 * time.Millisecond}}, 0)
		gaps := []time.Duration{0, 40 * time.Millisecond}
		var ctxs []context.Context
		var wrote []time.Time
		i := 0
		base := sendsOnceFunc(func(req *http.Request) (*http.Response, error) {
			ctxs = append(ctxs, req.Context())
			trace := httptrace.ContextClientTrace(req.Context())
			trace.GotConn(httptrace.GotConnInfo{Conn: addrConn{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}}, Reused: i > 0})
			trace.WroteRequest(httptrace.WroteRequestInfo{})
			wrote = append(wrote, time.Now())
			time.Sleep(gaps[i])
			i++
			return response(req, 200), nil
		})
		tr := New(lim, Options{Base: base})
		for n := range gaps {
			var info Info
			ctx := WithInfo(context.Background(), &info)
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.example/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if ctxs[n] != ctx {
				t.Errorf("request %d: the base got another context than WithInfo's: a second trace was composed", n)
			}
			if !info.Sent.Equal(wrote[n]) || info.NewConn != (n == 0) || !info.Local {
				t.Errorf("request %d: Info Sent %v NewConn %v Local %v, want %v %v true", n, info.Sent, info.NewConn, info.Local, wrote[n], n == 0)
			}
		}
		if got := lim.Stats().Margin; got != 40*time.Millisecond {
			t.Errorf("margin %v, want 40ms (the second answer's lag)", got)
		}
	})
}

// A request the transport admits itself keeps its first call in
// Info.Admission; each redirect it follows is a call of its own, in
// Info.Hops in order, with the cost the rules last recorded for it.
func TestTransportRedirectHops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, _ := ParseCostSource("header:X-Tokens")
		lim := newLimiter(t, []throttle.Rule{{N: 100, Window: time.Hour, Cost: true}}, 0)
		c, _ := client(lim, Options{CostFrom: cs}, func(req *http.Request) *http.Response {
			time.Sleep(time.Second)
			switch req.URL.Path {
			case "/a":
				return response(req, http.StatusFound, "Location", "/b")
			case "/b":
				return response(req, http.StatusMovedPermanently, "Location", "/c?token=s3cret")
			}
			return response(req, 200, "X-Tokens", "5")
		})
		start := time.Now()
		info := &Info{}
		req, _ := http.NewRequestWithContext(WithInfo(context.Background(), info), "GET", "http://api.example/a", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if !info.Admission.At.Equal(start) {
			t.Errorf("Info.Admission at %v, want the first call's, at %v", info.Admission.At, start)
		}
		h := info.Hops
		if len(h) != 2 || h[0].URL.Path != "/b" || h[1].URL.Path != "/c" || h[1].URL.Query().Get("token") != "s3cret" {
			t.Fatalf("Info.Hops = %+v; want /b, then /c (as sent)", h)
		}
		for i, want := range []struct {
			at   time.Duration
			cost int
		}{{time.Second, 1}, {2 * time.Second, 5}} {
			if h[i].At.Sub(start) != want.at || h[i].Ended.Sub(h[i].At) != time.Second || h[i].Cost != want.cost || h[i].Again {
				t.Errorf("hop %d: admitted at +%v, ended %v later, cost %d; want +%v, 1s, %d", i, h[i].At.Sub(start), h[i].Ended.Sub(h[i].At), h[i].Cost, want.at, want.cost)
			}
		}
		if st := lim.Stats(); st.InFlight != 0 || st.Admitted != 3 || st.Rules[0].Used != 7 {
			t.Errorf("in flight %d, admitted %d, cost counted %d; want 0, 3 and 7", st.InFlight, st.Admitted, st.Rules[0].Used)
		}
	})
}

// New sets the backend's margin to Options.Margin (the least it keeps),
// replacing the one the backend was made with; FixedMargin leaves the
// backend's as it is, and Options.Margin unused. The doc said only
// "FixedMargin keeps it as it is", which read as Options.Margin kept
// fixed: a caller asking for 50ms that way got none.
func TestTransportMarginOptions(t *testing.T) {
	rules := []throttle.Rule{{N: 10, Window: time.Second}}
	for _, tc := range []struct {
		name          string
		backend, want time.Duration
		opts          Options
	}{
		{"default replaces the backend's", time.Second, DefaultMargin, Options{}},
		{"Margin replaces the backend's", time.Second, 50 * time.Millisecond, Options{Margin: 50 * time.Millisecond}},
		{"FixedMargin leaves the backend's", time.Second, time.Second, Options{Margin: 50 * time.Millisecond, FixedMargin: true}},
		{"FixedMargin leaves none", 0, 0, Options{Margin: 50 * time.Millisecond, FixedMargin: true}},
	} {
		lim, err := throttle.New(throttle.Options{Rules: rules, Margin: tc.backend})
		if err != nil {
			t.Fatal(err)
		}
		New(lim, tc.opts)
		if got := lim.Stats().Margin; got != tc.want {
			t.Errorf("%s: margin %v, want %v", tc.name, got, tc.want)
		}
	} // Without rules of the caller's there are no lags to adapt to, but
	// the rules learned from the server keep the least margin, not none.
	for _, opts := range []Options{{Learn: true}, {Learn: true, Margin: 30 * time.Millisecond}} {
		lim, _ := throttle.New(throttle.Options{})
		New(lim, opts) // through the learner, which keeps it for its rules
		if got, want := lim.Stats().Margin, max(opts.Margin, DefaultMargin); got != want {
			t.Errorf("no rules, %+v: margin %v, want %v", opts, got, want)
		}
	}
}
