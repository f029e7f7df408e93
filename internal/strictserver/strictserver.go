// Package strictserver provides an HTTP handler for tests and benchmarks
// that enforces rate rules exactly on arrival time, so a client that breaks
// a rule by even a nanosecond sees a 429.
//
// Every request gets an arrival time when the handler starts (taken under
// the server's mutex, so arrivals are ordered). If admitting it would put
// more than N accepted arrivals into any window (t-Window, t] of any rule,
// the server answers 429 and does not count it as an arrival. Otherwise it
// records the arrival and answers 200 with the request path and a newline
// as the body.
//
// Paths with a meaning (after admission, so they count as arrivals):
//
//	/redirect/REST   302 to /REST
//	/status/NNN      status NNN, body as usual
//
// Options add the fault modes client tests need: refusing or resetting the
// first requests, rate-limit headers, published policies, and a delay
// before each answer. With CostParam, requests carry a cost (tokens, say)
// that cost rules count, and the answer is JSON that reports it, as an LLM
// API's does: {"path": "/x", "usage": {"total_tokens": 42}}.
package strictserver

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// HeaderStyle selects the rate-limit headers a Server sends.
type HeaderStyle int

// Header styles. Headers describe the rule with the fewest calls left
// (the first such rule on ties) after the request is handled.
const (
	// NoHeaders sends no rate-limit headers.
	NoHeaders HeaderStyle = iota
	// RateLimitHeaders sends RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset (delta seconds, rounded up, until a call frees up).
	RateLimitHeaders
	// XRateLimitHeaders sends X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (epoch seconds, rounded up, as GitHub does).
	XRateLimitHeaders
)

// Options configure a Server. The zero value accepts every request at once.
type Options struct {
	// Rules are enforced exactly; none means no limit.
	Rules []throttle.Rule
	// Now returns the current time; nil means time.Now. It should not go
	// backwards, but the check stays exact if it does.
	Now func() time.Time
	// Delay holds each accepted request this long before answering (or
	// until the client goes away).
	Delay time.Duration

	// ResetFirst makes the first ResetFirst requests have their
	// connection reset (hijacked and closed with SO_LINGER 0) instead of
	// an answer. They are not arrivals.
	ResetFirst int
	// RefuseFirst makes the next RefuseFirst requests (after the resets)
	// get 429 with a Retry-After header. They are not arrivals.
	RefuseFirst int
	// RetryAfter is the Retry-After sent with RefuseFirst refusals, in
	// whole seconds rounded up (0 sends "0").
	RetryAfter time.Duration
	// RetryAfterDate sends Retry-After as an HTTP-date, Now()+RetryAfter
	// rounded up to the second, instead of seconds.
	RetryAfterDate bool
	// RuleRetryAfter sends a Retry-After with a refusal for a rule, in
	// whole seconds rounded up: until the request would have been
	// admissible, as a server that knows its windows says.
	RuleRetryAfter bool
	// Headers selects rate-limit headers for every answer, 429s included.
	Headers HeaderStyle
	// Policy, if set, is sent as RateLimit-Policy with every answer
	// ("q=100;w=60" members), so clients can learn the rules.
	Policy bool
	// CostParam, if set, names the query parameter that carries each
	// request's cost (a whole number, 1 if missing or bad), times
	// UsageFactor if set: a true cost other than the one the client
	// estimated. Cost rules (Rule.Cost) sum it, count rules count the
	// request as 1, and the body of an accepted answer is JSON reporting
	// it as usage.total_tokens.
	CostParam   string
	UsageFactor float64
	// Record keeps every request as the server decided it, for Requests:
	// a refusal can then be read next to the calls around it.
	Record bool
}

// Request is one request as a Server with Options.Record decided it.
type Request struct {
	At      time.Time // its arrival time, as the rules counted it
	Path    string    // the request URI
	Outcome string    // "accepted", "refused" or "reset"
}

// Stats counts what a Server has seen.
type Stats struct {
	Accepted int64 // arrivals, answered 200 (or as the path asks)
	Refused  int64 // answered 429: rules or RefuseFirst
	Reset    int64 // connections reset by ResetFirst
	// First and Last are the earliest and latest accepted arrivals; zero
	// without arrivals.
	First, Last time.Time
}

// Makespan returns Last - First, or 0 without arrivals.
func (s Stats) Makespan() time.Duration {
	if s.Accepted == 0 {
		return 0
	}
	return s.Last.Sub(s.First)
}

// Server is an http.Handler that enforces rules exactly; see the package
// comment. Create one with New. It is safe for concurrent use.
type Server struct {
	opts Options

	mu       sync.Mutex
	seen     int         // requests so far, for ResetFirst and RefuseFirst
	arrivals []time.Time // accepted arrivals, sorted
	costs    []int       // their costs, parallel to arrivals
	refused  int64
	reset    int64
	requests []Request // with Options.Record, in arrival order
}

// New returns a Server enforcing opts.Rules, which must be valid.
func New(opts Options) (*Server, error) {
	for _, r := range opts.Rules {
		if !r.Valid() {
			return nil, fmt.Errorf("strictserver: %w", &throttle.RuleError{Spec: r.String(), Want: "a rule a limiter can keep"})
		}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Rules = slices.Clone(opts.Rules)
	return &Server{opts: opts}, nil
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Accepted: int64(len(s.arrivals)), Refused: s.refused, Reset: s.reset}
	if len(s.arrivals) > 0 {
		st.First, st.Last = s.arrivals[0], s.arrivals[len(s.arrivals)-1]
	}
	return st
}

// Calls returns the accepted arrivals with their costs, sorted, ready for
// throttle.Check.
func (s *Server) Calls() []throttle.Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := make([]throttle.Call, len(s.arrivals))
	for i, t := range s.arrivals {
		cs[i] = throttle.Call{At: t, Cost: s.costs[i]}
	}
	return cs
}

// Arrivals returns a sorted copy of the accepted arrival times, ready for
// throttle.Check.
func (s *Server) Arrivals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.arrivals)
}

// Requests returns a copy of the requests seen so far, in arrival order,
// if Options.Record is set; else nil.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// verdict is what ServeHTTP decided under the mutex.
type verdict int

const (
	accept verdict = iota
	refuseRule
	refuseFirst
	resetConn
)

var outcomes = [...]string{accept: "accepted", refuseRule: "refused", refuseFirst: "refused", resetConn: "reset"}

// ServeHTTP admits or refuses r; see the package comment.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	now := s.opts.Now()
	s.seen++
	v := accept
	var wait time.Duration
	cost := s.cost(r)
	switch {
	case s.seen <= s.opts.ResetFirst:
		v = resetConn
		s.reset++
	case s.seen <= s.opts.ResetFirst+s.opts.RefuseFirst:
		v = refuseFirst
		s.refused++
	case !s.admissible(now, cost):
		v = refuseRule
		s.refused++
		if s.opts.RuleRetryAfter {
			wait = s.untilAdmissible(now, cost)
		}
	default:
		i := countTo(s.arrivals, now)
		s.arrivals = slices.Insert(s.arrivals, i, now)
		s.costs = slices.Insert(s.costs, i, cost)
	}
	if s.opts.Record {
		s.requests = append(s.requests, Request{At: now, Path: r.URL.RequestURI(), Outcome: outcomes[v]})
	}
	if (s.opts.Headers != NoHeaders || s.opts.Policy) && v != resetConn {
		s.setHeaders(w.Header(), now)
	}
	s.mu.Unlock()

	switch v {
	case resetConn:
		resetConnection(w)
	case refuseFirst:
		if s.opts.RetryAfterDate {
			at := now.Add(s.opts.RetryAfter + time.Second - 1).Truncate(time.Second)
			w.Header().Set("Retry-After", at.UTC().Format(http.TimeFormat))
		} else {
			w.Header().Set("Retry-After", strconv.FormatInt(ceilSeconds(s.opts.RetryAfter), 10))
		}
		http.Error(w, "strictserver: refused (RefuseFirst)", http.StatusTooManyRequests)
	case refuseRule:
		if s.opts.RuleRetryAfter {
			w.Header().Set("Retry-After", strconv.FormatInt(ceilSeconds(wait), 10))
		}
		http.Error(w, "strictserver: rate rule exceeded", http.StatusTooManyRequests)
	case accept:
		s.answer(w, r, cost)
	}
}

// cost returns r's cost: the CostParam query parameter, else 1.
func (s *Server) cost(r *http.Request) int {
	if s.opts.CostParam == "" {
		return 1
	}
	c, err := strconv.Atoi(r.URL.Query().Get(s.opts.CostParam))
	if err != nil || c < 1 {
		return 1
	}
	if s.opts.UsageFactor > 0 {
		c = max(1, int(float64(c)*s.opts.UsageFactor+0.5))
	}
	return c
}

// answer writes the response to an accepted request after the delay.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, cost int) {
	if s.opts.Delay > 0 {
		t := time.NewTimer(s.opts.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	path := r.URL.Path
	if rest, ok := strings.CutPrefix(path, "/redirect/"); ok {
		http.Redirect(w, r, "/"+rest, http.StatusFound)
		return
	}
	code := http.StatusOK
	if rest, ok := strings.CutPrefix(path, "/status/"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n >= 200 && n <= 599 {
			code = n
		}
	}
	if s.opts.CostParam != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, "{\"path\":%q,\"usage\":{\"total_tokens\":%d}}\n", path, cost)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, path)
}

// admissible reports whether an arrival at t of the given cost keeps
// every rule. Only windows containing t gain the call, and each is as full
// as the one ending at t or at a later arrival in [t, t+Window), so those
// are the windows counted. It requires s.mu held and s.arrivals sorted.
func (s *Server) admissible(t time.Time, cost int) bool {
	a := s.arrivals
	for _, r := range s.opts.Rules {
		w := 1
		if r.Cost {
			w = cost
		}
		// End at t, then at each later arrival inside [t, t+Window).
		if s.held(r, t)+w > r.N {
			return false
		}
		for i := countTo(a, t); i < len(a) && a[i].Before(t.Add(r.Window)); i++ {
			if s.held(r, a[i])+w > r.N {
				return false
			}
		}
	}
	return true
}

// held returns what the accepted arrivals in (t-Window, t] weigh under r.
// It requires s.mu held.
func (s *Server) held(r throttle.Rule, t time.Time) int {
	lo, hi := countTo(s.arrivals, t.Add(-r.Window)), countTo(s.arrivals, t)
	if !r.Cost {
		return hi - lo
	}
	sum := 0
	for _, c := range s.costs[lo:hi] {
		sum += c
	}
	return sum
}

// untilAdmissible returns how long after t a request of the given cost
// would be admissible, to the millisecond. It requires s.mu held.
func (s *Server) untilAdmissible(t time.Time, cost int) time.Duration {
	for d := time.Millisecond; d < 24*time.Hour; d += time.Millisecond {
		if s.admissible(t.Add(d), cost) {
			return d
		}
		if d > time.Second {
			d += 9 * time.Millisecond
		}
	}
	return 24 * time.Hour
}

// setHeaders adds the rate-limit headers for the state at now. It
// requires s.mu held.
func (s *Server) setHeaders(h http.Header, now time.Time) {
	if len(s.opts.Rules) == 0 {
		return
	}
	if s.opts.Policy {
		var members []string
		for i, r := range s.opts.Rules {
			members = append(members, fmt.Sprintf("\"r%d\";q=%d;w=%d", i, r.N, ceilSeconds(r.Window)))
		}
		h.Set("RateLimit-Policy", strings.Join(members, ", "))
	}
	if s.opts.Headers == NoHeaders {
		return
	}
	best, remaining := throttle.Rule{}, -1
	var reset time.Duration
	for _, r := range s.opts.Rules {
		// Arrivals in (now-Window, now]; sorted, so the oldest frees first.
		lo := countTo(s.arrivals, now.Add(-r.Window))
		used := s.held(r, now)
		if left := max(r.N-used, 0); remaining < 0 || left < remaining {
			best, remaining, reset = r, left, 0
			if used > 0 {
				reset = s.arrivals[lo].Add(r.Window).Sub(now)
			}
		}
	}
	switch s.opts.Headers {
	case RateLimitHeaders:
		h.Set("RateLimit-Limit", strconv.Itoa(best.N))
		h.Set("RateLimit-Remaining", strconv.Itoa(remaining))
		h.Set("RateLimit-Reset", strconv.FormatInt(ceilSeconds(reset), 10))
	case XRateLimitHeaders:
		h.Set("X-RateLimit-Limit", strconv.Itoa(best.N))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		at := now.Add(reset + time.Second - 1).Truncate(time.Second)
		h.Set("X-RateLimit-Reset", strconv.FormatInt(at.Unix(), 10))
	}
}

// countTo returns the number of instants in sorted a that are <= t.
func countTo(a []time.Time, t time.Time) int {
	n, _ := slices.BinarySearchFunc(a, t, func(x, t time.Time) int {
		if x.After(t) {
			return 1
		}
		return -1
	})
	return n
}

// ceilSeconds returns d in whole seconds, rounded up; 0 for d <= 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// resetConnection closes the client's connection abruptly, so the client
// sees a reset rather than a response.
func resetConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // HTTP/2 or a wrapper: abort the stream instead
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // RST instead of FIN
	}
	conn.Close()
}
