// Package pacehttp puts pace's engine in front of any HTTP client: a
// Transport (an http.RoundTripper) admits each request through a
// throttle.Backend, stamps when it left, and listens to the server: a 429
// or 503 with Retry-After, and rate-limit headers that say the quota is
// spent, pause every admission; refusals teach it the server's rule
// (package learn); a response that tells its true cost corrects the cost
// counted; the margin adapts to the lags it measures (package margin).
//
// Most callers want New with the backend of their rules, then an
// http.Client whose Transport is the result:
//
//	lim, _ := throttle.New(throttle.Options{Rules: rules})
//	client := &http.Client{Transport: pacehttp.New(lim, pacehttp.Options{Learn: true})}
//
// Every request that reaches the server is a call the rules count: a
// redirect that an http.Client follows goes through the Transport as a
// request of its own and is admitted again, and so is an attempt that
// net/http sends again on another connection (see Options.Base).
//
// A request holds its admission, and the backend's in-flight slot, until
// its response body is closed or read to its end; a caller that drops a
// body without closing it keeps the slot, as it keeps the connection. A
// response without a body (to a HEAD, a 204 or 304, a Content-Length of
// 0) gives them back with its headers, as net/http gives back its
// connection. A
// request that upgrades its connection (101 Switching Protocols, such as
// a websocket) is one admission; its body is the connection, an
// io.ReadWriteCloser as net/http gives it, and it holds the slot until it
// is closed.
package pacehttp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/backend"
	"github.com/pace-cli/pace/throttle/learn"
	"github.com/pace-cli/pace/throttle/margin"
)

// DefaultMaxServerPause is the longest pause a server may ask for (with
// Retry-After or rate-limit headers); a longer one is cut to it.
const DefaultMaxServerPause = 5 * time.Minute

// DefaultMargin is the least margin a Transport keeps: what a request's
// path from the admission to the server's clock may add.
const DefaultMargin = 10 * time.Millisecond

// defaultBackoff is how long admissions pause after a 429 or 503 that
// says neither Retry-After nor when the quota resets. Each such answer in
// a row doubles it, up to maxBackoff; a success resets it.
const (
	defaultBackoff = time.Second
	maxBackoff     = time.Minute
)

// Options configure a Transport. The zero value admits every request at
// cost 1 and honours the server's pauses.
type Options struct {
	// Base sends the requests; nil means http.DefaultTransport. Each
	// attempt it makes after the first within one RoundTrip (net/http's
	// Transport sends a replayable request again when a kept-alive
	// connection failed) is admitted as a call of its own; a Base with a
	// method SendsOnce(*http.Request) bool that returns true promises to
	// send the request again only when none of it reached the server, and
	// is not watched.
	Base http.RoundTripper
	// Cost returns a request's cost under cost rules; nil means 1. Its
	// error fails the request before it is admitted.
	Cost func(*http.Request) (int, error)
	// CostFrom reads each call's true cost from its 2xx response and
	// corrects the cost the rules counted. A response that does not say
	// keeps the estimate (Info.CostErr says why). A JSON body is kept
	// until it ends to be read: at most 16 MiB of each, and 256 MiB of
	// all the bodies a Transport reads at once; past either, its cost is
	// not read.
	CostFrom CostSource
	// Learn infers the server's rule from its refusals and keeps it in
	// front of the backend; Adopt, with Learn, also keeps the rules the
	// server publishes (RateLimit-Policy). Without Learn, or with
	// IgnoreServerLimits, nothing is learned nor adopted. Hint is told,
	// once each, things worth saying: a policy the server publishes, a
	// cost the response did not tell.
	Learn, Adopt bool
	Hint         func(string)
	// Remaining, if set, returns how many requests are still to come, or
	// -1 if that is not known: the learner raises a rule it inferred (a
	// probe the server may refuse) only when they could repay a refusal
	// (learn.Options.Remaining). It must not call the Transport.
	Remaining func() int64
	// IgnoreServerLimits ignores rate-limit headers (RateLimit*,
	// X-RateLimit-*) and learns nothing from them. Retry-After on a 429
	// or 503 is always honoured.
	IgnoreServerLimits bool
	// MaxServerPause is the longest pause a server may ask for. A refusal
	// asking for longer pauses nothing (Info.PauseErr says so: the caller
	// decides), unless CutServerPauses is set, but for its Retry-After when
	// only its rate-limit headers asked for longer; rate-limit headers on a
	// success asking for longer pause for MaxServerPause. It bounds the
	// wait under the rules the server publishes (Adopt) too: a request
	// they would hold longer is not sent, and RoundTrip returns a
	// *learn.PolicyWaitTooLong. 0 means DefaultMaxServerPause.
	MaxServerPause time.Duration
	// CutServerPauses makes a refusal that asks for a pause longer than
	// MaxServerPause pause for MaxServerPause (Info.PauseErr still says
	// what it asked), for a caller that cannot fail the request on its
	// own: a proxy passes the refusal on to its client, and the server's
	// "stop" must not vanish.
	CutServerPauses bool
	// Backoff is the first pause after a 429 or 503 that gives no
	// Retry-After; 0 means one second.
	Backoff time.Duration
	// Margin is the least margin the backend keeps, adapted upwards to
	// the lags measured; 0 means DefaultMargin. New sets the backend's
	// margin to it, replacing any the backend was made with
	// (throttle.Options.Margin). FixedMargin leaves the backend's margin
	// as it is, and Margin unused: set the margin on the backend. With
	// no rules of the caller's, the margin stays Margin (for the rules
	// learned from the server), not adapted.
	Margin      time.Duration
	FixedMargin bool
	// OnPause, if set, is told of every pause a response starts.
	OnPause func(d time.Duration, reason string)
}

// Transport is an http.RoundTripper that admits each request under a
// backend's rules and listens to the server's answers. Make one with New;
// the zero Transport is New(nil, Options{}): no rules of the caller's, the
// server's pauses kept. It is safe for concurrent use.
type Transport struct {
	once    sync.Once // sets the rest up: in New, or at a zero Transport's first use
	base    http.RoundTripper
	backend throttle.Backend // what admits: the learner, if any, in front
	learner *learn.Backend   // nil unless Options.Learn
	margin  *margin.Tracker  // nil with FixedMargin
	opts    Options

	mu         sync.Mutex
	boLast     time.Duration // the last backoff pause; 0 after a success
	boUntil    time.Time     // when it ends
	costHinted bool          // Options.Hint was told that a response did not tell its cost
	costKept   atomic.Int64  // bytes of the bodies kept to read their costs (maxCostBodies)
}

// New returns a Transport admitting through b. A nil b is a limiter
// without rules (throttle.New(throttle.Options{})): only the server's
// pauses, and with Learn its rule learned from refusals, hold requests.
func New(b throttle.Backend, opts Options) *Transport {
	t := &Transport{}
	t.once.Do(func() { t.init(b, opts) })
	return t
}

// ready makes a zero Transport what New(nil, Options{}) returns, at its
// first use; it does nothing to one New made. Every exported method calls
// it first.
func (t *Transport) ready() {
	t.once.Do(func() { t.init(nil, Options{}) })
}

// init sets t up as New(b, opts) does.
func (t *Transport) init(b throttle.Backend, opts Options) {
	if b == nil {
		b, _ = throttle.New(throttle.Options{}) // no rules: it cannot fail
	}
	if opts.Base == nil {
		opts.Base = http.DefaultTransport
	}
	if opts.MaxServerPause <= 0 {
		opts.MaxServerPause = DefaultMaxServerPause
	}
	if opts.Backoff <= 0 {
		opts.Backoff = defaultBackoff
	}
	if opts.Margin <= 0 {
		opts.Margin = DefaultMargin
	}
	t.base, t.backend, t.opts = opts.Base, b, opts
	var rules []throttle.Rule
	st := b.Stats()
	for _, r := range st.Rules {
		rules = append(rules, r.Rule)
	}
	if opts.Learn && !opts.IgnoreServerLimits {
		t.learner = learn.New(b, rules, learn.Options{Adopt: opts.Adopt, Hint: opts.Hint, Remaining: opts.Remaining, MaxWait: opts.MaxServerPause})
		t.backend = t.learner
	}
	switch {
	case opts.FixedMargin:
	case len(rules) > 0:
		t.margin = margin.New(t.backend, margin.Config{Floor: opts.Margin, Least: opts.Margin, Rules: rules}.ForStore(st.Store.Name))
	default:
		// No rule of the caller's to measure lags against: the rules
		// learned from the server keep the least margin, not none.
		t.backend.SetMargin(opts.Margin)
	}
}

// Backend returns what the Transport admits through: the backend, with
// the rules learned from the server in front of it. A caller that admits
// a request itself (see Info.Admission) admits through it.
func (t *Transport) Backend() throttle.Backend {
	t.ready()
	return t.backend
}

// Stats returns the backend's statistics.
func (t *Transport) Stats() throttle.Stats {
	t.ready()
	return t.backend.Stats()
}

// CloseIdleConnections closes the idle connections of the base
// transport, if it has such a method (http.Transport does), so that
// http.Client.CloseIdleConnections reaches them through the Transport.
func (t *Transport) CloseIdleConnections() {
	t.ready()
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Learned returns the rules learned from the server now, and what the
// learner did; nothing without Options.Learn.
func (t *Transport) Learned() ([]throttle.Rule, learn.Report) {
	t.ready()
	if t.learner == nil {
		return nil, learn.Report{}
	}
	return t.learner.Rules(), t.learner.Report()
}

// hintCost tells Options.Hint, the first time only, that a response did
// not tell its cost and why. Once, whatever the reason: a server that
// sends a different garbled cost with each answer must not fill the
// caller's stderr, nor memory, with one line per answer.
func (t *Transport) hintCost(err error) {
	if t.opts.Hint == nil {
		return
	}
	t.mu.Lock()
	seen := t.costHinted
	t.costHinted = true
	t.mu.Unlock()
	if !seen {
		t.opts.Hint(fmt.Sprintf("%s: keeping the estimated cost; later answers that do not tell are not reported", err))
	}
}

// Info is what the Transport did with a request and learned from its
// response. A caller that wants it passes one with WithInfo.
type Info struct {
	// Admission is the request's admission: its first call's, the calls
	// after it (redirects) are in Hops. If it is set (its At is not
	// zero) when WithInfo is called, the request was admitted already, as
	// Admission, through Backend: the Transport neither admits it again,
	// nor releases or corrects it. Each redirect it follows reaches the
	// server as a call of its own, and is admitted under the rules as one
	// (backend.WithSlotHeld: on the caller's slot), released when its
	// response is closed; Admission stays the caller's. The rest (the server's pauses, learning, reading the
	// cost from the response into Cost) is as for any request. The margin
	// is then the caller's to adapt: it knows when its admission
	// returned.
	Admission throttle.Admission
	// Sent is when the request had been written; zero if it never was.
	Sent time.Time
	// Answered is when the response's headers came; zero if none did.
	// The request had reached the server by then.
	Answered time.Time
	// NewConn says that the request went on a connection opened for it
	// (not one kept alive): a server may accept a new connection late,
	// which the client cannot see.
	NewConn bool
	// Local says that the server is on this machine (a loopback or unix
	// socket connection): it shares this machine's CPUs, so when the
	// machine is busy it reads requests late, and its answers bound when
	// it read them. A server elsewhere reads on its own CPUs; how long it
	// took to answer is its work, which says nothing of when it read.
	Local bool
	// RetryAfter is the wait a 429 or 503 asked for; 0 if none.
	RetryAfter time.Duration
	// PauseUntil and PauseReason: the pause the response started, if any.
	PauseUntil  time.Time
	PauseReason string
	// PauseErr is a *PauseTooLong when a refusal asked for a pause
	// longer than Options.MaxServerPause, which was not taken.
	PauseErr error
	// Policy holds the rules the server published, from PolicyHeader.
	Policy       []throttle.Rule
	PolicyHeader string
	// Cost is the call's true cost as the response told it, once the
	// body has been read (for a JSON cost); 0 if it did not tell. The
	// Transport corrects the admissions it made itself; a caller that
	// admitted a request corrects its own with this cost.
	Cost int
	// CostErr says why the response did not tell the cost, if
	// Options.CostFrom asked for it.
	CostErr error
	// Hops are the calls the request made besides its first (Admission),
	// each admitted under the rules as a call of its own, in the order
	// they were admitted: the redirects an http.Client followed, and the
	// attempts the base transport sent again after a kept-alive
	// connection failed (Hop.Again). The server counts each, so a record
	// of the calls made (a job log) needs them too.
	Hops []Hop
}

// Hop is a call of Info.Hops.
type Hop struct {
	At     time.Time // when the rules admitted it
	Cost   int       // its cost, corrected if its response told it
	Method string
	URL    *url.URL  // as sent, credentials included: redact before showing
	Again  bool      // sent again by the base transport, not a redirect
	Ended  time.Time // when its response's headers came or it failed
}

// PauseTooLong is the Info.PauseErr of a refusal whose server asked for
// a pause longer than Options.MaxServerPause.
type PauseTooLong struct {
	Asked  time.Duration // the pause asked for
	Reason string        // the header that asked, such as "429 Retry-After: 3600"
	Max    time.Duration // Options.MaxServerPause
}

func (e *PauseTooLong) Error() string {
	return fmt.Sprintf("pacehttp: the server asked for a pause of %s (%s), longer than the longest allowed, %s",
		e.Asked.Round(time.Second), e.Reason, e.Max)
}

type infoKey struct{}

// reqState is what a context from WithInfo carries: the Info, whether
// the caller admitted the request, and the one trace that stamps when the
// request was first written.
type reqState struct {
	info     *Info
	admitted bool
	trace    httptrace.ClientTrace
	mu       sync.Mutex
	sent     time.Time // the first write's end; the hook runs on the transport's writer
	newConn  bool      // the first connection was opened for the request
	local    bool      // and leads to this machine
}

// wrote is the trace's WroteRequest hook.
func (st *reqState) wrote(httptrace.WroteRequestInfo) {
	now := time.Now()
	st.mu.Lock()
	if st.sent.IsZero() {
		st.sent = now
	}
	st.mu.Unlock()
}

// unsent reports whether no write has been stamped yet.
func (st *reqState) unsent() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.sent.IsZero()
}

// gotConn is the trace's GotConn hook.
func (st *reqState) gotConn(c httptrace.GotConnInfo) {
	local := isLocal(c.Conn)
	st.mu.Lock()
	if st.sent.IsZero() { // the connection the request is first written on
		st.newConn, st.local = !c.Reused, local
	}
	st.mu.Unlock()
}

// isLocal reports whether c leads to this machine: a loopback address or
// a unix socket.
func isLocal(c net.Conn) bool {
	if c == nil {
		return false
	}
	switch a := c.RemoteAddr().(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

// WithInfo returns a context whose requests report to info, and, if
// info.Admission is set, were admitted already (see Info.Admission). Use
// one context, and one Info, per request (its redirects included).
func WithInfo(ctx context.Context, info *Info) context.Context {
	st := &reqState{info: info, admitted: !info.Admission.At.IsZero()}
	st.trace.WroteRequest, st.trace.GotConn = st.wrote, st.gotConn
	return context.WithValue(httptrace.WithClientTrace(ctx, &st.trace), infoKey{}, st)
}

// RoundTrip admits req, sends it, and listens to the response. Its errors
// are the admission's (the context's, the backend's) or the base
// transport's.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.ready()
	ctx := req.Context()
	st, _ := ctx.Value(infoKey{}).(*reqState)
	var info *Info
	var a throttle.Admission
	own := true
	redirect := false // a redirect followed by a request the caller admitted
	if st != nil {
		info = st.info
		switch {
		case st.admitted && req.Response == nil:
			a, own = info.Admission, false
		case st.admitted:
			// The server counts it as a call of its own: admitted under
			// the rules, in flight on the caller's slot.
			redirect = true
		}
	} else {
		info = &Info{}
	}
	var returned time.Time
	cost := info.Admission.Cost
	hopAt := -1 // a redirect's index in info.Hops
	if own {
		cost = 1
		if t.opts.Cost != nil {
			var err error
			if cost, err = t.opts.Cost(req); err != nil {
				closeBody(req)
				return nil, err
			}
		}
		actx := ctx
		if redirect {
			actx = backend.WithSlotHeld(ctx)
		}
		var err error
		if a, err = t.backend.Admit(actx, cost); err != nil {
			closeBody(req)
			return nil, err
		}
		returned = time.Now()
		if t.margin != nil {
			t.margin.Started(a.At, a.Lag(returned, returned))
		}
	}
	switch {
	case own && st != nil && req.Response != nil:
		info.Hops = append(info.Hops, Hop{At: a.At, Cost: a.Cost, Method: req.Method, URL: req.URL})
		hopAt = len(info.Hops) - 1
	case !redirect:
		info.Admission = a
	}

	// The margin needs when this very attempt was written (a redirect is
	// a call of its own): a trace of its own, on a copy of the request.
	// Otherwise the one trace of WithInfo stamps the first write, and a
	// request without an Info needs none. An attempt that is the first
	// written under WithInfo's trace (not a redirect, nothing written
	// before) has that trace stamp it: a second trace would stamp the same
	// write, at the cost of httptrace's reflective compose of the two
	// (allocations for each request, and each hook called by reflection).
	var hop *reqState
	if own && t.margin != nil {
		if st != nil && req.Response == nil && st.unsent() {
			hop = st
		} else {
			hop = &reqState{}
			hop.trace.WroteRequest, hop.trace.GotConn = hop.wrote, hop.gotConn
			req = req.WithContext(httptrace.WithClientTrace(ctx, &hop.trace))
		}
	}
	// An attempt the base transport makes after the first is a call of
	// its own (see resendGuard).
	var guard *resendGuard
	if so, ok := t.base.(interface{ SendsOnce(*http.Request) bool }); !ok || !so.SendsOnce(req) {
		guard = &resendGuard{t: t, ctx: ctx, cost: max(cost, 1)}
		guard.trace.GotConn = guard.gotConn
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &guard.trace))
	}
	resp, err := t.base.RoundTrip(req)
	arrived := time.Now()
	if hopAt >= 0 {
		info.Hops[hopAt].Ended = arrived
	}
	if err == nil && resp == nil {
		// A RoundTripper must return one or the other; http.Client turns
		// this into an error too.
		err = errors.New("pacehttp: the base transport returned neither a response nor an error")
	}
	if ferr := guard.end(info, req, arrived); ferr != nil {
		if err == nil && resp.Body != nil {
			resp.Body.Close()
		}
		resp, err = nil, ferr
	}
	if st != nil {
		st.mu.Lock()
		if info.Sent.IsZero() {
			info.Sent, info.NewConn, info.Local = st.sent, st.newConn, st.local
		}
		st.mu.Unlock()
	}
	if err == nil && info.Answered.IsZero() {
		info.Answered = arrived
	}
	if hop != nil {
		hop.mu.Lock()
		sent, newConn, local := hop.sent, hop.newConn, hop.local
		hop.mu.Unlock()
		if info.Sent.IsZero() {
			info.Sent, info.NewConn, info.Local = sent, newConn, local
		}
		switch {
		case sent.IsZero():
			t.margin.Forget(a.At)
		case err != nil:
			// No answer: the call may have reached the server, when is
			// not known.
			t.margin.Observe(a.At, a.Lag(returned, sent), -1)
		case local:
			// The answer came by arrived: the call had been read by then.
			t.margin.ObserveAnswered(a.At, a.Lag(returned, sent), a.Lag(returned, arrived), newConn)
		default:
			// Arrived within the floor, and by the answer.
			t.margin.Observe(a.At, a.Lag(returned, sent), arrived.Sub(returned))
		}
	}
	if err != nil {
		if own {
			a.Release()
		}
		return nil, err
	}
	if resp.Body == nil {
		resp.Body = http.NoBody // as http.Client fills it in
	}
	t.listen(a, resp, info)
	json := t.opts.CostFrom.Kind == "json" && okStatus(resp.StatusCode)
	if t.opts.CostFrom.Kind == "header" && okStatus(resp.StatusCode) {
		t.correct(req.Context(), &a, own, hopAt, info, func() (int, error) { return headerCost(t.opts.CostFrom, resp.Header) })
	}
	if own || json {
		b := &body{ReadCloser: resp.Body, ctx: req.Context(), t: t, a: a, info: info, own: own, hop: hopAt, json: json}
		resp.Body = b
		if rw, ok := b.ReadCloser.(io.ReadWriteCloser); ok && resp.StatusCode == http.StatusSwitchingProtocols {
			// An upgraded connection (a websocket): its body is the
			// connection, written to as well, and it holds the admission
			// until it is closed.
			resp.Body = &upgraded{body: b, w: rw}
		} else if bodiless(req, resp) {
			// The call has ended with its headers: net/http gives the
			// connection back without a Close, and callers often leave
			// it out (a HEAD).
			b.end(true)
		}
	}
	return resp, nil
}

// bodiless reports whether resp has no body to read: an answer to a HEAD,
// a 204 or 304 (http.NoBody), or one of Content-Length 0 (HTTP/2's
// empty body is not http.NoBody). An upgraded connection's body is the
// connection.
func bodiless(req *http.Request, resp *http.Response) bool {
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return false
	}
	return resp.Body == http.NoBody || req.Method == http.MethodHead || resp.ContentLength == 0
}

// resendGuard admits each attempt after the first that the base
// transport makes within one RoundTrip. net/http's Transport sends a
// replayable request (a GET, or one with an Idempotency-Key) again, on
// another connection, when a kept-alive one failed after it was written;
// the server may have read the first, so the second is a call the rules
// must admit. The guard sees each attempt's connection (the trace's
// GotConn, before the request is written on it) and admits every one after
// the first as a call of its own, on the request's slot; they are rule
// records only, released when the base returns. If such an admission fails,
// the guard closes an HTTP/1 connection, so that nothing is written on it,
// and RoundTrip returns the admission's error. (HTTP/2 sends a request
// again only when the server said it did not process it; its connection,
// shared by other requests, is left alone.)
type resendGuard struct {
	t     *Transport
	ctx   context.Context
	cost  int
	trace httptrace.ClientTrace
	mu    sync.Mutex
	conns int
	extra []throttle.Admission
	err   error
}

func (g *resendGuard) gotConn(c httptrace.GotConnInfo) {
	g.mu.Lock()
	g.conns++
	again := g.conns > 1 && g.err == nil
	g.mu.Unlock()
	if !again {
		return
	}
	a, err := g.t.backend.Admit(backend.WithSlotHeld(g.ctx), g.cost)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.err = err
		if c.Conn != nil && !isH2(c.Conn) {
			c.Conn.Close()
		}
		return
	}
	g.extra = append(g.extra, a)
}

// end records the attempts after the first in info.Hops, as calls of req
// that ended at ended, releases their admissions, and returns the error
// of one that failed, if any. A nil guard watched nothing.
func (g *resendGuard) end(info *Info, req *http.Request, ended time.Time) error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range g.extra {
		a := &g.extra[i]
		info.Hops = append(info.Hops, Hop{At: a.At, Cost: a.Cost, Method: req.Method, URL: req.URL, Again: true, Ended: ended})
		a.Release()
	}
	return g.err
}

// isH2 reports whether c speaks HTTP/2 (negotiated over TLS).
func isH2(c net.Conn) bool {
	tc, ok := c.(interface{ ConnectionState() tls.ConnectionState })
	return ok && tc.ConnectionState().NegotiatedProtocol == "h2"
}

// upgraded is the body of a 101 Switching Protocols response: the
// connection itself, as net/http gives it (an io.ReadWriteCloser), with
// the admission released when it is closed. Its Close may come from
// another goroutine than its Read (httputil.ReverseProxy closes it so).
type upgraded struct {
	*body
	w io.Writer
}

func (u *upgraded) Write(p []byte) (int, error) { return u.w.Write(p) }

// closeBody closes a request's body that will not be sent, as a
// RoundTripper must.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// okStatus reports whether code is a 2xx.
func okStatus(code int) bool { return code >= 200 && code <= 299 }

// correct reads the call's cost with cost into info and, if the
// Transport admitted the call (own), corrects a; or records why it could
// not. ctx, the request's, bounds the wait for a shared store's answer
// (the store still records a correction whose caller is gone). a goes
// into info.Admission, unless it is a redirect's, info.Hops[hop] (hop is
// -1 otherwise): its corrected cost goes there.
func (t *Transport) correct(ctx context.Context, a *throttle.Admission, own bool, hop int, info *Info, cost func() (int, error)) {
	c, err := cost()
	if err != nil {
		info.CostErr = err
		t.hintCost(err)
		return
	}
	info.Cost = c
	if own {
		if err := a.Correct(ctx, c); err != nil {
			info.CostErr = err
		}
	}
	if hop >= 0 {
		info.Hops[hop].Cost = a.Cost
		return
	}
	info.Admission = *a
}

// listen pauses admissions when resp asks for it, learns from it, and
// records both in info.
func (t *Transport) listen(a throttle.Admission, resp *http.Response, info *Info) {
	now := time.Now()
	h := resp.Header
	if !t.opts.IgnoreServerLimits {
		info.Policy, info.PolicyHeader = parsePolicy(h)
	}
	var until time.Time
	var reason string
	backedOff := false    // the pause is the transport's own backoff, not the server's word
	var raUntil time.Time // the pause a refusal's Retry-After (above 0) asks for
	var raReason string
	later := func(u time.Time, why string) {
		if u.After(until) {
			until, reason = u, why
		}
	}
	if !t.opts.IgnoreServerLimits {
		if rl, ok := parseRateLimit(h, now); ok && rl.Remaining == 0 && rl.Reset.After(now) {
			later(rl.Reset, rl.Header+": 0")
		}
	}
	code := resp.StatusCode
	refused := code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable
	if refused {
		if u, ok := parseRetryAfter(get(h, keyRetryAfter), now); ok {
			info.RetryAfter = u.Sub(now)
			t.resetBackoff()
			ra := strings.TrimSpace(get(h, keyRetryAfter))
			own := false
			if !u.After(now) {
				// Retry-After: 0 (or a date past): the server asks for no
				// wait, but a refusal that comes again and again must
				// not be retried at once: back off.
				u, _ = t.backoff(now)
				own = true
			}
			// The backoff is pace's own only if it is what pauses: a
			// reset the rate-limit headers give further off is still
			// the server's word.
			backedOff = own && u.After(until)
			why := fmt.Sprintf("%d Retry-After: %s", code, ra)
			if !own {
				raUntil, raReason = u, why
			}
			later(u, why)
		} else if until.IsZero() {
			u, d := t.backoff(now)
			later(u, fmt.Sprintf("%d without Retry-After: backoff %v", code, d))
			backedOff = true
		}
	} else if okStatus(code) {
		t.resetBackoff()
	}
	if until.After(now) {
		if d := until.Sub(now); d > t.opts.MaxServerPause {
			if refused && !backedOff {
				// Not taken whole: a garbled or hostile header must not
				// stall every request for days. The caller decides, or
				// has the pause cut.
				info.PauseErr = &PauseTooLong{Asked: d, Reason: reason, Max: t.opts.MaxServerPause}
				until = time.Time{}
				switch {
				case t.opts.CutServerPauses:
					until = now.Add(t.opts.MaxServerPause)
					reason += fmt.Sprintf(" (cut to %v)", t.opts.MaxServerPause)
				case raUntil.After(now) && raUntil.Sub(now) <= t.opts.MaxServerPause:
					// The longer pause came from the rate-limit
					// headers: the Retry-After, always honoured, holds.
					until, reason = raUntil, raReason
				}
			} else {
				// A body that came is kept; the pause (headers saying
				// the quota is spent, or the transport's own backoff) is
				// cut to the longest allowed.
				until = now.Add(t.opts.MaxServerPause)
			}
		}
	}
	if until.After(now) {
		info.PauseUntil, info.PauseReason = until, reason
		t.backend.PauseUntil(until, "server: "+reason)
		if t.opts.OnPause != nil {
			t.opts.OnPause(until.Sub(now), reason)
		}
	}
	if t.learner != nil {
		t.learner.Observe(a, learn.Outcome{Status: code, RetryAfter: info.RetryAfter,
			Policy: info.Policy, PolicyHeader: info.PolicyHeader})
	}
}

// backoff returns the end of the pause for a 429/503 without Retry-After
// at now, and its length. While an earlier backoff pause is still in
// force, answers to requests sent before it began share it; after it, the
// next one is twice as long, up to a minute.
func (t *Transport) backoff(now time.Time) (time.Time, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Before(t.boUntil) {
		return t.boUntil, t.boLast
	}
	d := t.opts.Backoff
	if t.boLast > 0 {
		d = min(2*t.boLast, maxBackoff)
	}
	t.boLast, t.boUntil = d, now.Add(d)
	return t.boUntil, d
}

// resetBackoff makes the next backoff the first again.
func (t *Transport) resetBackoff() {
	t.mu.Lock()
	t.boLast, t.boUntil = 0, time.Time{}
	t.mu.Unlock()
}

// body is a response body that releases its admission when closed or
// read to its end (own), and reads the cost from a JSON body (json).
type body struct {
	io.ReadCloser
	ctx       context.Context // the request's
	t         *Transport
	a         throttle.Admission
	info      *Info
	own, json bool
	hop       int        // a is the redirect's info.Hops[hop]; -1 if a is no redirect's
	mu        sync.Mutex // guards kept and over: Close may come from another goroutine than Read
	kept      []byte     // counted in t.costKept
	over      error      // why the body is not kept: past maxCostBody, past maxCostBodies with the others, or ended
	once      sync.Once
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.json && n > 0 {
		b.mu.Lock()
		if b.over == nil {
			switch {
			case len(b.kept)+n > maxCostBody:
				b.dropLocked(fmt.Errorf("%w: the body is larger than %d MiB", errNoCost, maxCostBody>>20))
			case b.t.costKept.Add(int64(n)) > maxCostBodies:
				// The responses read at once would hold too much
				// together (a proxy's, or many large ones).
				b.t.costKept.Add(-int64(n))
				b.dropLocked(fmt.Errorf("%w: the bodies being read for their costs hold more than %d MiB together", errNoCost, maxCostBodies>>20))
			default:
				b.kept = append(b.kept, p[:n]...)
			}
		}
		b.mu.Unlock()
	}
	if errors.Is(err, io.EOF) {
		b.end(true)
	}
	return n, err
}

func (b *body) Close() error {
	err := b.ReadCloser.Close()
	b.end(false)
	return err
}

// dropLocked gives back what b kept, and keeps nothing more for why.
// Requires b.mu held.
func (b *body) dropLocked(why error) {
	b.t.costKept.Add(-int64(len(b.kept)))
	b.kept, b.over = nil, why
}

// errBodyEnded is why a body that has ended keeps nothing more.
var errBodyEnded = errors.New("pacehttp: the body has ended")

// end reads the cost, if the whole body came, and releases the admission.
func (b *body) end(whole bool) {
	b.once.Do(func() {
		if b.json {
			b.mu.Lock()
			defer b.mu.Unlock()
			switch {
			case b.over != nil:
				b.t.correct(b.ctx, &b.a, b.own, b.hop, b.info, func() (int, error) { return 0, b.over })
			case whole:
				b.t.correct(b.ctx, &b.a, b.own, b.hop, b.info, func() (int, error) { return jsonCost(b.t.opts.CostFrom, b.kept) })
			default:
				b.info.CostErr = fmt.Errorf("%w: the body was not read to its end", errNoCost)
			}
			// A Read still under way when Close ended the body keeps
			// nothing of what it returns: nothing would give it back.
			b.dropLocked(errBodyEnded)
		}
		if b.own {
			b.a.Release()
		}
	})
}
