package fetch

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/internal/strictserver"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// noRules returns a backend without rules.
func noRules(t testing.TB) throttle.Backend {
	b, err := throttle.New(throttle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pauseCall is one PauseUntil a fakePauser received, or one OnPause call
// (with d set).
type pauseCall struct {
	until  time.Time
	d      time.Duration
	reason string
}

// fakePauser is a backend without rules that records PauseUntil and
// OnPause calls.
type fakePauser struct {
	throttle.Backend
	mu     sync.Mutex
	calls  []pauseCall
	onCall []pauseCall
}

func (p *fakePauser) PauseUntil(t time.Time, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, pauseCall{until: t, reason: reason})
}

func (p *fakePauser) onPause(d time.Duration, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onCall = append(p.onCall, pauseCall{d: d, reason: reason})
}

// in2025 moves a synctest bubble's clock, which starts at 2000-01-01, to
// 2025-03-01 12:00 UTC and returns that instant: X-rateLimit-Reset values
// are epoch seconds only from 1e9 (2001) on.
func in2025() time.Time {
	t := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	time.Sleep(time.Until(t))
	return time.Now()
}

// TestFetchServerSignals: 429 and 503 with Retry-After, without it, and
// rate-limit headers saying the quota is spent pause the Pauser for as
// long as they say, and tell OnPause; a pause longer than MaxServerPause
// fails the item instead.
func TestFetchServerSignals(t *testing.T) {
	tests := []struct {
		name     string
		code     int
		header   []string
		ignore   bool          // IgnoreServerLimits
		maxPause time.Duration // MaxServerPause
		want     time.Duration // the pause; 0: none
		reason   string
		wantErr  string // the item fails with this instead
		// retryAfter is what a 429 or 503's Retry-After asked for.
		retryAfter time.Duration
	}{
		{name: "429 retry-after seconds", code: 429, header: []string{"Retry-After", "5"},
			want: 5 * time.Second, reason: "429 Retry-After: 5", retryAfter: 5 * time.Second},
		{name: "503 retry-after date", code: 503, header: []string{"Retry-After", "Sat, 01 Mar 2025 12:00:09 GMT"},
			want: 9 * time.Second, reason: "503 Retry-After: Sat, 01 Mar 2025 12:00:09 GMT", retryAfter: 9 * time.Second},
		// Retry-After: 0 asks for no wait, but refusals that keep coming
		// must not be retried at once: pace backs off.
		{name: "429 retry-after 0", code: 429, header: []string{"Retry-After", "0"},
			want: time.Second, reason: "429 Retry-After: 0"},
		{name: "retry-after ignored on 500", code: 500, header: []string{"Retry-After", "5"}},
		{name: "429 without retry-after backs off", code: 429, want: time.Second, reason: "429 without Retry-After: backoff 1s"},
		{name: "429 uses the rate-limit reset", code: 429, header: []string{"RateLimit-Remaining", "0", "RateLimit-Reset", "4"},
			want: 4 * time.Second, reason: "RateLimit-Remaining: 0"},
		{name: "retry-after and reset: the later wins", code: 429,
			header: []string{"Retry-After", "2", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "6"},
			want:   6 * time.Second, reason: "X-RateLimit-Remaining: 0", retryAfter: 2 * time.Second},
		{name: "200 quota spent", code: 200, header: []string{"RateLimit-Remaining", "0", "RateLimit-Reset", "3"},
			want: 3 * time.Second, reason: "RateLimit-Remaining: 0"},
		{name: "200 quota left", code: 200, header: []string{"RateLimit-Remaining", "1", "RateLimit-Reset", "3"}},
		{name: "200 x epoch", code: 200, header: []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1740830408"},
			want: 8 * time.Second, reason: "X-RateLimit-Remaining: 0"},
		{name: "200 structured", code: 200, header: []string{"RateLimit", `"q";r=0;t=2`},
			want: 2 * time.Second, reason: "RateLimit: 0"},
		{name: "ignore server limits", code: 200, header: []string{"RateLimit-Remaining", "0", "RateLimit-Reset", "3"}, ignore: true},
		{name: "ignore server limits keeps retry-after", code: 429,
			header: []string{"Retry-After", "5", "RateLimit-Remaining", "0", "RateLimit-Reset", "30"}, ignore: true,
			want: 5 * time.Second, reason: "429 Retry-After: 5", retryAfter: 5 * time.Second},
		{name: "retry-after up to the max", code: 429, header: []string{"Retry-After", "300"}, maxPause: 5 * time.Minute,
			want: 5 * time.Minute, reason: "429 Retry-After: 300", retryAfter: 5 * time.Minute},
		{name: "retry-after past the max", code: 429, header: []string{"Retry-After", "301"}, maxPause: 5 * time.Minute,
			wantErr: "the server asked for a pause of 5m1s (429 Retry-After: 301), longer than --max-server-pause 5m0s", retryAfter: 301 * time.Second},
		{name: "retry-after past the default max", code: 503, header: []string{"Retry-After", "3600"},
			wantErr: "the server asked for a pause of 1h0m0s", retryAfter: time.Hour},
		{name: "reset past the max", code: 429, header: []string{"RateLimit-Remaining", "0", "RateLimit-Reset", "90"}, maxPause: time.Minute,
			wantErr: "the server asked for a pause of 1m30s (RateLimit-Remaining: 0)"},
		// A body that came is kept: a 200 saying the quota is spent for an
		// hour (GitHub's hourly quota) pauses for the longest allowed.
		{name: "200 quota spent past the max", code: 200, header: []string{"RateLimit-Remaining", "0", "RateLimit-Reset", "3600"}, maxPause: time.Minute,
			want: time.Minute, reason: "RateLimit-Remaining: 0"},
		// pace's own backoff past the max is cut, not failed: the server
		// asked for nothing.
		{name: "backoff past the max", code: 429, maxPause: 500 * time.Millisecond,
			want: 500 * time.Millisecond, reason: "429 without Retry-After: backoff 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				now := in2025()
				p := &fakePauser{Backend: noRules(t)}
				e := newFetch(t, Options{
					Client:             inProcess(func(req *http.Request) *http.Response { return response(req, tt.code, tt.header...) }),
					Backend:            p,
					OnPause:            p.onPause,
					IgnoreServerLimits: tt.ignore,
					MaxServerPause:     tt.maxPause,
				})
				res := fetchOne(t, e, "http://api.example/x")
				var want, wantOn []pauseCall
				var wantUntil time.Time
				if tt.want > 0 {
					wantUntil = now.Add(tt.want)
					want = []pauseCall{{until: wantUntil, reason: "server: " + tt.reason}}
					wantOn = []pauseCall{{d: tt.want, reason: tt.reason}}
				}
				if !slices.EqualFunc(p.calls, want, samePause) || !slices.EqualFunc(p.onCall, wantOn, samePause) {
					t.Errorf("PauseUntil calls %v, OnPause calls %v; want %v and %v", p.calls, p.onCall, want, wantOn)
				}
				if h := res.HTTP; !h.PauseUntil.Equal(wantUntil) || h.PauseReason != tt.reason {
					t.Errorf("HTTP.PauseUntil, PauseReason = %v, %q; want %v, %q", h.PauseUntil, h.PauseReason, wantUntil, tt.reason)
				}
				if res.HTTP.RetryAfter != tt.retryAfter {
					t.Errorf("HTTP.RetryAfter = %v, want %v", res.HTTP.RetryAfter, tt.retryAfter)
				}
				switch {
				case tt.wantErr != "":
					if res.OK() || !errors.Is(res.Err, runner.ErrPermanent) || !strings.Contains(res.Err.Error(), tt.wantErr) {
						t.Errorf("Execute: %s, want a permanent failure containing %q", res.Status(), tt.wantErr)
					}
				case tt.code == 200 && !res.OK():
					t.Errorf("Execute: %s, want ok", res.Status())
				}
			})
		})
	}
}

// samePause reports whether a and b are the same call.
func samePause(a, b pauseCall) bool {
	return a.until.Equal(b.until) && a.d == b.d && a.reason == b.reason
}

// TestFetchBackoffDoubles: 429s without Retry-After share a backoff while
// it lasts, double it after, and a success resets it.
func TestFetchBackoffDoubles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		var code int // read by requests made one at a time
		p := &fakePauser{Backend: noRules(t)}
		e := newFetch(t, Options{
			Client:  inProcess(func(req *http.Request) *http.Response { return response(req, code) }),
			Backend: p,
			Backoff: time.Second,
		})
		step := func(at time.Duration, c int, wantUntil time.Duration) {
			t.Helper()
			time.Sleep(time.Until(t0.Add(at)))
			code = c
			res := fetchOne(t, e, "http://api.example/x")
			var got time.Duration
			if !res.HTTP.PauseUntil.IsZero() {
				got = res.HTTP.PauseUntil.Sub(t0)
			}
			if got != wantUntil {
				t.Errorf("at +%v, status %d: pause until +%v, want +%v", at, c, got, wantUntil)
			}
		}
		step(0, 429, 1*time.Second)                               // first: 1s
		step(500*time.Millisecond, 503, 1*time.Second)            // during it: shared
		step(1*time.Second, 429, 3*time.Second)                   // after it: 2s more
		step(3*time.Second, 429, 7*time.Second)                   // 4s
		step(7*time.Second, 200, 0)                               // success resets
		step(8*time.Second, 429, 9*time.Second)                   // 1s again
		step(100*time.Second, 429, 100*time.Second+2*time.Second) // doubled, not reset by time alone
		for range 10 {
			time.Sleep(time.Hour)
			code = 429
			fetchOne(t, e, "http://api.example/x")
		}
		last := p.calls[len(p.calls)-1]
		if d := time.Until(last.until); d != time.Minute {
			t.Errorf("after many 429s: backoff %v, want the cap %v", d, time.Minute)
		}
	})
}

// TestFetch429PausesAllAdmissions runs a pool on a real limiter against a
// strict server that refuses the first request with Retry-After: 1. No
// request may arrive during the pause, except those already on their way
// when the 429 came back; the refused item is retried after it.
func TestFetch429PausesAllAdmissions(t *testing.T) {
	t.Parallel() // real time, mostly waiting
	ss, err := strictserver.New(strictserver.Options{RefuseFirst: 1, RetryAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var refusedAt time.Time
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		ss.ServeHTTP(sw, r)
		if sw.code == http.StatusTooManyRequests {
			mu.Lock()
			refusedAt = time.Now()
			mu.Unlock()
		}
	}))
	lim, err := throttle.New(throttle.Options{MaxInFlight: 4})
	if err != nil {
		t.Fatal(err)
	}
	e := newFetch(t, Options{})
	e.Use(lim, nil, nil)
	done := runPool(t, runner.Options{Jobs: 4, Limiter: lim, Executor: e, Retries: 2}, nItemsURL(srv.URL, 12)...)
	ok := 0
	for _, r := range done {
		if r.OK() {
			ok++
		}
	}
	st := ss.Stats()
	if ok != 12 || st.Refused != 1 || st.Accepted != 12 {
		t.Fatalf("ok %d, server accepted %d, refused %d; want 12, 12, 1", ok, st.Accepted, st.Refused)
	}
	// Requests admitted before the pause was set may still arrive just
	// after the 429; give them 100ms. Nothing else until the second is up.
	const inFlightSlack = 100 * time.Millisecond
	after := 0
	for _, a := range ss.Arrivals() {
		d := a.Sub(refusedAt)
		if d > inFlightSlack && d < time.Second {
			t.Errorf("arrival %v after the 429, during its Retry-After: 1", d)
		}
		if d >= time.Second {
			after++
		}
	}
	if after == 0 {
		t.Error("no arrival after the pause, want the retry and the rest")
	}
	if s := lim.Stats(); s.Pauses < 1 || !strings.Contains(s.PauseReason, "429 Retry-After: 1") {
		t.Errorf("limiter pauses %d, reason %q; want a 429 pause", s.Pauses, s.PauseReason)
	}
}

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// TestFetchHonoursRateLimitHeaders: pace has no rule of its own; the
// server's rate-limit headers alone keep it within 3/500ms.
func TestFetchHonoursRateLimitHeaders(t *testing.T) {
	t.Parallel() // real time, mostly waiting
	for _, style := range []strictserver.HeaderStyle{strictserver.RateLimitHeaders, strictserver.XRateLimitHeaders} {
		t.Run(fmt.Sprint("style ", style), func(t *testing.T) {
			t.Parallel()
			ss, err := strictserver.New(strictserver.Options{
				Rules:   []throttle.Rule{{N: 3, Window: 500 * time.Millisecond}},
				Headers: style,
			})
			if err != nil {
				t.Fatal(err)
			}
			srv := serve(t, ss)
			lim, err := throttle.New(throttle.Options{MaxInFlight: 1})
			if err != nil {
				t.Fatal(err)
			}
			e := newFetch(t, Options{Backend: lim})
			failed := 0
			for _, r := range runPool(t, runner.Options{Jobs: 1, Limiter: lim, Executor: e}, nItemsURL(srv.URL, 5)...) {
				if !r.OK() {
					failed++
				}
			}
			if st := ss.Stats(); st.Refused != 0 || failed != 0 || lim.Stats().Pauses < 1 {
				t.Errorf("refused %d, failed %d, pauses %d; want 0, 0, at least 1", st.Refused, failed, lim.Stats().Pauses)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// roundTripFunc is a transport made of a function: a server in the test's
// process, without sockets, so that fetches run in synctest bubbles.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// response is what a roundTripFunc answers: a status, header pairs and a
// short body.
func response(req *http.Request, code int, header ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Add(header[i], header[i+1])
	}
	body := "body\n"
	return &http.Response{
		Status: strconv.Itoa(code) + " " + http.StatusText(code), StatusCode: code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h,
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}

// inProcess returns a client whose every request answer returns.
func inProcess(answer func(req *http.Request) *http.Response) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return answer(req), nil
	})}
}
