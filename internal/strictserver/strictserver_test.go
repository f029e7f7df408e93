package strictserver

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeNow is a settable clock for Options.Now.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) Now() time.Time  { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) Set(t time.Time) { f.mu.Lock(); defer f.mu.Unlock(); f.t = t }

func newServer(t *testing.T, opts Options) (*Server, *fakeNow) {
	t.Helper()
	clock := &fakeNow{t: t0}
	opts.Now = clock.Now
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, clock
}

// get serves one GET of path at instant at and returns the recorded response.
func get(s *Server, clock *fakeNow, at time.Duration, path string) *httptest.ResponseRecorder {
	clock.Set(t0.Add(at))
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

func TestExactRules(t *testing.T) {
	const ms = time.Millisecond
	s, clock := newServer(t, Options{Rules: []throttle.Rule{{N: 3, Window: time.Second}, {N: 2, Window: 100 * ms}}})
	steps := []struct {
		at   time.Duration
		want int
	}{
		{0, 200},
		{0, 200},
		{0, 429},          // 2/100ms
		{100*ms - 1, 429}, // still inside (t-100ms, t]
		{100 * ms, 200},   // exactly one window later
		{500 * ms, 429},   // 3/s
		{time.Second - 1, 429},
		{time.Second, 200}, // the two at 0 left the 1s window
		{1050 * ms, 200},   // (50ms, 1050ms] holds 100ms, 1s and this one
		{1099 * ms, 429},   // both rules: 4 in the second, 3 in 100ms
		{1100 * ms, 200},   // 100ms left the second
	}
	for i, st := range steps {
		rec := get(s, clock, st.at, "/x")
		if rec.Code != st.want {
			t.Errorf("step %d: GET at t0+%v = %d, want %d", i, st.at, rec.Code, st.want)
		}
	}
	got := s.Stats()
	want := Stats{Accepted: 6, Refused: 5, First: t0, Last: t0.Add(1100 * ms)}
	if got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
	if got.Makespan() != 1100*ms {
		t.Errorf("Stats().Makespan() = %v, want 1.1s", got.Makespan())
	}
}

func TestBody(t *testing.T) {
	s, clock := newServer(t, Options{})
	tests := []struct {
		path, body, location string
		code                 int
	}{
		{"/a/b?q=1", "/a/b\n", "", 200},
		{"/status/503", "/status/503\n", "", 503},
		{"/status/x", "/status/x\n", "", 200},
		{"/redirect/a/b", "", "/a/b", 302},
	}
	for _, tt := range tests {
		rec := get(s, clock, 0, tt.path)
		if rec.Code != tt.code || (tt.body != "" && rec.Body.String() != tt.body) || rec.Header().Get("Location") != tt.location {
			t.Errorf("GET %s = %d %q Location %q, want %d %q Location %q",
				tt.path, rec.Code, rec.Body, rec.Header().Get("Location"), tt.code, tt.body, tt.location)
		}
	}
	if st := s.Stats(); st.Accepted != int64(len(tests)) {
		t.Errorf("Stats().Accepted = %d, want %d: every path is an arrival", st.Accepted, len(tests))
	}
}

// TestBackwardsClockStaysExact feeds arrival times in random order and
// checks each decision against throttle.Check on the accepted set.
func TestBackwardsClockStaysExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 100 {
		rules := []throttle.Rule{
			{N: 1 + rng.IntN(3), Window: time.Duration(1+rng.IntN(10)) * time.Millisecond},
			{N: 2 + rng.IntN(5), Window: time.Duration(5+rng.IntN(30)) * time.Millisecond},
		}
		s, clock := newServer(t, Options{Rules: rules})
		var accepted []time.Time
		for range 40 {
			at := time.Duration(rng.IntN(80)) * time.Millisecond / 2
			code := get(s, clock, at, "/").Code
			legal := true
			for _, res := range throttle.Check(rules, calls1(append(slices.Clone(accepted), t0.Add(at))...)) {
				legal = legal && res.Violations == 0
			}
			if want := map[bool]int{true: 200, false: 429}[legal]; code != want {
				t.Fatalf("trial %d %v: GET at t0+%v after %v = %d, want %d", trial, rules, at, accepted, code, want)
			}
			if legal {
				accepted = append(accepted, t0.Add(at))
			}
		}
		slices.SortFunc(accepted, time.Time.Compare)
		if got := s.Arrivals(); !slices.Equal(got, accepted) {
			t.Fatalf("trial %d: Arrivals() = %v, want %v", trial, got, accepted)
		}
	}
}

func TestConcurrentRequests(t *testing.T) {
	rules := []throttle.Rule{{N: 5, Window: 20 * time.Millisecond}, {N: 12, Window: 60 * time.Millisecond}}
	s, err := New(Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				s.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	if st.Accepted+st.Refused != workers*each || st.Accepted < 5 {
		t.Errorf("Stats() = %+v, want Accepted+Refused = %d and Accepted >= 5", st, workers*each)
	}
	for _, res := range throttle.Check(rules, calls1(s.Arrivals()...)) {
		if res.Violations != 0 {
			t.Errorf("accepted arrivals break %v: %+v", res.Rule, res)
		}
	}
}

func TestRefuseFirst(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"seconds round up", Options{RefuseFirst: 2, RetryAfter: 1500 * time.Millisecond}, "2"},
		{"zero", Options{RefuseFirst: 2}, "0"},
		{"HTTP-date", Options{RefuseFirst: 2, RetryAfter: 1500 * time.Millisecond, RetryAfterDate: true},
			"Wed, 01 Jan 2025 00:00:02 GMT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, clock := newServer(t, tt.opts)
			for i := range 3 {
				rec := get(s, clock, 100*time.Millisecond, "/")
				code, ra := rec.Code, rec.Header().Get("Retry-After")
				if i < 2 && (code != 429 || ra != tt.want) {
					t.Errorf("request %d = %d Retry-After %q, want 429 %q", i+1, code, ra, tt.want)
				}
				if i == 2 && (code != 200 || ra != "") {
					t.Errorf("request 3 = %d Retry-After %q, want 200 without Retry-After", code, ra)
				}
			}
			if st := s.Stats(); st.Accepted != 1 || st.Refused != 2 {
				t.Errorf("Stats() = %+v, want 1 accepted, 2 refused", st)
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	rules := []throttle.Rule{{N: 10, Window: time.Minute}, {N: 2, Window: 3 * time.Second}}
	tests := []struct {
		style HeaderStyle
		names [3]string
		reset string // at t0 and at t0+2.5s
	}{
		{RateLimitHeaders, [3]string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"}, "3"},
		{XRateLimitHeaders, [3]string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"},
			strconv.FormatInt(t0.Unix()+3, 10)},
	}
	for _, tt := range tests {
		s, clock := newServer(t, Options{Rules: rules, Headers: tt.style})
		// Two calls at t0 use up 2/3s (and 2 of 10/min); the third is refused.
		for i, want := range []struct {
			code      int
			remaining string
		}{{200, "1"}, {200, "0"}, {429, "0"}} {
			rec := get(s, clock, 0, "/")
			h := rec.Header()
			got := [3]string{h.Get(tt.names[0]), h.Get(tt.names[1]), h.Get(tt.names[2])}
			if w := [3]string{"2", want.remaining, tt.reset}; rec.Code != want.code || got != w {
				t.Errorf("style %d request %d = %d %v, want %d %v", tt.style, i+1, rec.Code, got, want.code, w)
			}
		}
		// 2.5s later the 3s window frees in 0.5s: delta seconds round up
		// to 1, the epoch form stays at t0+3s.
		rec := get(s, clock, 2500*time.Millisecond, "/")
		want := map[HeaderStyle]string{RateLimitHeaders: "1", XRateLimitHeaders: tt.reset}[tt.style]
		if got := rec.Header().Get(tt.names[2]); rec.Code != 429 || got != want {
			t.Errorf("style %d at t0+2.5s = %d %s %q, want 429 %q", tt.style, rec.Code, tt.names[2], got, want)
		}
	}
}

func TestResetFirst(t *testing.T) {
	s, err := New(Options{ResetFirst: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 2 {
		resp, err := client.Get(srv.URL + "/x")
		if err == nil {
			resp.Body.Close()
			t.Fatalf("request %d = %s, want a connection error", i+1, resp.Status)
		}
	}
	resp, err := client.Get(srv.URL + "/x")
	if err != nil {
		t.Fatalf("request 3 error: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "/x\n" {
		t.Errorf("request 3 = %s %q, want 200 %q", resp.Status, body, "/x\n")
	}
	if st := s.Stats(); st.Reset != 2 || st.Accepted != 1 || st.Refused != 0 {
		t.Errorf("Stats() = %+v, want 2 reset, 1 accepted", st)
	}
}

func TestDelay(t *testing.T) {
	const delay = 50 * time.Millisecond
	s, err := New(Options{Delay: delay})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()

	start := time.Now()
	resp, err := http.Get(srv.URL + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if el := time.Since(start); el < delay {
		t.Errorf("GET with Delay %v answered after %v, want at least the delay", delay, el)
	}

	// A client that gives up is not kept waiting for the delay.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/slow", nil)
	if resp, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			resp.Body.Close()
		}
		t.Errorf("GET with 5ms timeout error = %v, want context.DeadlineExceeded", err)
	}
}

func TestNewRejectsInvalidRules(t *testing.T) {
	for _, r := range []throttle.Rule{{N: 0, Window: time.Second}, {N: 1, Window: 0}} {
		if _, err := New(Options{Rules: []throttle.Rule{r}}); !errors.As(err, new(*throttle.RuleError)) {
			t.Errorf("New(rule %+v) error = %v, want a *throttle.RuleError", r, err)
		}
	}
}

// calls1 returns one call of cost 1 per instant.
func calls1(times ...time.Time) []throttle.Call {
	cs := make([]throttle.Call, len(times))
	for i, t := range times {
		cs[i] = throttle.Call{At: t, Cost: 1}
	}
	return cs
}
