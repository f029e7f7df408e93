// Package proxy is pace's reverse proxy: an http.Handler that sends every
// request it receives to one upstream through a pacehttp.Transport, so
// that a program pace does not launch (a Python script, terraform, a cloud
// SDK) has each of its calls admitted under the rules.
//
// A request waits, first in line (FIFO) for one of Options.Jobs slots,
// then for the rules (the backend's FIFO); it holds both until its
// response has been copied to the client or the client has gone, or
// has stalled for Options.ClientTimeout (stall.go). A
// client that disconnects while it waits spends nothing: the admission
// runs under the request's context, which net/http cancels for a request
// with a body only once the body has been read, so a small body is read
// before the wait (body.go says which). The response streams back as it
// comes (no buffering), its status and headers intact; hop-by-hop
// headers are dropped as RFC 9110 says and Host is the upstream's
// (httputil.ReverseProxy). No X-Forwarded-* header is added, and those the
// client sent are removed: the proxy is the client's own agent, and the
// upstream sees the client's calls as if it made them itself.
//
// A request the upstream upgrades (101 Switching Protocols: a websocket)
// is one admission; the connection is then copied both ways, unpaced,
// and holds its slot until either side closes it (or CloseUpgraded).
//
// Credentials (Authorization, cookies, API keys in headers or the query)
// pass to the upstream untouched; the proxy's own messages and error
// bodies never show them.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pace-cli/pace/internal/redact"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/runner/internal/direct"
	"github.com/pace-cli/pace/runner/internal/leanhttp"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/learn"
	"github.com/pace-cli/pace/throttle/pacehttp"
)

// Options configure a Proxy.
type Options struct {
	// Upstream is where every request goes: its scheme and host, and a
	// path that prefixes the request's.
	Upstream *url.URL
	// Transport admits and sends the requests: a pacehttp.Transport whose
	// Base is Proxy.Base (Base marks the end of the admission).
	Transport *pacehttp.Transport
	// Jobs caps the requests in flight upstream; 0 means no cap.
	Jobs int
	// MaxWait, if positive, answers 429 to a request whose admission
	// would wait longer, with a Retry-After computed from the rules.
	MaxWait time.Duration
	// Rules are the rules the backend keeps, for the Retry-After of
	// MaxWait's refusals.
	Rules []throttle.Rule
	// Log, if set, is told of each request once its answer has begun
	// (method, redacted URL, status, wait), and of errors.
	Log func(msg string)
	// Redactor hides credentials in what Log and OnEvent are told; nil
	// applies the built-in rules.
	Redactor *redact.Redactor
	// ClientTimeout, if positive, is how long a client may send no byte
	// of its request's body, or (with NewServer's server) take no byte
	// of its answer: past it the request is abandoned, its slot given
	// back (see stall.go). DefaultClientTimeout is pace proxy's.
	ClientTimeout time.Duration
	// Timeout, if positive, is how long the upstream may take no byte of
	// a request's body (upload.go): past it the request is cancelled and
	// answered 504, as one whose answer's headers do not come in time
	// (the --timeout of NewUpstreamTransport's transport, which counts
	// only once the body is written).
	Timeout time.Duration
	// OnEvent, if set, is told of each request that is admitted, as a
	// pool tells of a job (see report.go): JobStarted once it goes
	// upstream, JobFinished then JobDone once its answer has been copied
	// to the client, or has failed. Its Job's Argv is the method and the
	// redacted upstream URL. Calls are serialised. A request never
	// admitted (answered 429 by MaxWait, gone while waiting, refused while
	// stopping) spends nothing and has no event: Stats counts it.
	OnEvent func(runner.Event)
}

// Stats counts what a Proxy did.
type Stats struct {
	Requests int64         // requests received
	Status   map[int]int64 // upstream answers by status
	Refused  int64         // upstream answers 429 or 503
	Waits    int64         // requests that waited for a slot or the rules
	WaitTime time.Duration // time they waited, in all
	TooLong  int64         // answered 429 by the proxy (MaxWait, or a published rule past MaxServerPause)
	Connect  int64         // CONNECT requests, answered 405: not a forward proxy
	Gone     int64         // clients gone while their request waited: nothing spent
	Failed   int64         // admitted, then answered 502 or 504 by the proxy (the upstream down or slow), or 408 (the body stalled)
	Stalled  int64         // answered 408 by the proxy without being admitted: the client stopped sending its body
	DotPath  int64         // answered 400 by the proxy: a "." or ".." segment in the path, which could climb out of the upstream's path
	Asterisk int64         // answered 400 by the proxy: "*" as the target of another method than OPTIONS (net/http answers OPTIONS * itself)
	BadBody  int64         // answered 400 by the proxy: a malformed body (chunked encoding), read before the wait
	Unsent   int64         // answered 503 by the proxy without being admitted: stopping, or the quota's store down
	InFlight int64         // admitted and not yet answered in full
	Waiting  int64         // waiting for a slot or the rules now
}

// Proxy is the reverse proxy. Make one with New; it is safe for
// concurrent use.
type Proxy struct {
	opts  Options
	rp    *httputil.ReverseProxy
	slots chan struct{} // nil: no cap
	red   *redact.Redactor
	// buffers are the copy buffers of both paths.
	buffers bufferPool
	// reencodeQueries: GODEBUG has ReverseProxy re-encode every query,
	// so every request takes it (see bodiless).
	reencodeQueries bool
	noBodiless      bool // tests: every request through ReverseProxy

	stopCtx  context.Context // cancelled by Stop
	stop     context.CancelFunc
	stopList stopList // the requests Stop must end (stop.go)
	requests atomic.Int64
	waits    atomic.Int64
	waitTime atomic.Int64
	tooLong  atomic.Int64
	connect  atomic.Int64
	dotPath  atomic.Int64
	asterisk atomic.Int64
	badBody  atomic.Int64
	gone     atomic.Int64
	failed   atomic.Int64
	stalled  atomic.Int64
	unsent   atomic.Int64
	refused  atomic.Int64
	inFlight atomic.Int64
	waitingN atomic.Int64
	buffered atomic.Int64 // bytes of the bodies read before their wait (see body.go)
	spooled  atomic.Int64 // bytes of the bodies drained to disk while they wait (spool.go)
	seq      atomic.Int64 // the requests admitted so far
	upMu     sync.Mutex
	upgrades map[*upgradeBody]struct{} // upgraded connections open; guarded by upMu
	activeMu sync.Mutex
	active   int           // requests being served; guarded by activeMu
	idle     chan struct{} // closed when active drops to 0; guarded by activeMu
	evMu     sync.Mutex    // serialises OnEvent
	urlMu    sync.Mutex
	urls     map[string]string // redacted upstream URLs by the client's target; guarded by urlMu
	urlBytes int               // the text urls holds; guarded by urlMu
	mu       sync.Mutex
	status   map[int]int64
	past     []throttle.Call // recent admissions, for MaxWait's estimates
	longest  time.Duration   // the longest window of the rules
}

// Errors a request's context can be cancelled with.
var (
	errTooLong  = errors.New("pace proxy: the wait would be longer than --max-wait")
	errStopping = errors.New("pace proxy: stopping")
)

// New returns a Proxy for opts. Options.Transport must be a Transport
// made with Base as its base (see Base).
func New(opts Options) (*Proxy, error) {
	if opts.Upstream == nil || opts.Upstream.Host == "" {
		return nil, errors.New("proxy: no upstream")
	}
	if opts.Transport == nil {
		return nil, errors.New("proxy: no transport")
	}
	p := &Proxy{opts: opts, red: opts.Redactor, status: map[int]int64{}, buffers: newBufferPool(), reencodeQueries: reencodesQueries()}
	p.stopCtx, p.stop = context.WithCancel(context.Background())
	if p.red == nil {
		p.red = redact.New()
	}
	if opts.Jobs > 0 {
		p.slots = make(chan struct{}, opts.Jobs)
	}
	for _, r := range opts.Rules {
		p.longest = max(p.longest, r.Window)
	}
	up := opts.Upstream
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(up) // scheme, host, path prefix; Host is the upstream's
			// A target in absolute form may carry user information,
			// which a server ignores and http.Transport never sends: the
			// job log must not show it as the upstream's.
			pr.Out.URL.User = nil
		},
		Transport: slotTransport{p},
		// 0: a body without a length (streamed) or an event stream goes
		// to the client at each write (ReverseProxy's own rule); one with
		// a length as the server's buffer fills, without a timer per
		// request.
		FlushInterval: 0,
		BufferPool:    p.buffers,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler:  p.fail,
		ModifyResponse: func(r *http.Response) error {
			p.answered(r)
			if rq := requestOf(r.Request.Context()); rq != nil {
				p.toClient(r.Header, rq.host)
				noSniff(rq.w.Header(), r.Header)
			}
			return nil
		},
	}
	return p, nil
}

// bufferPool gives httputil.ReverseProxy its copy buffers, reused.
type bufferPool struct{ pool *sync.Pool }

func newBufferPool() bufferPool {
	return bufferPool{&sync.Pool{New: func() any { return new([32 << 10]byte) }}}
}

func (b bufferPool) Get() []byte  { return b.pool.Get().(*[32 << 10]byte)[:] }
func (b bufferPool) Put(p []byte) { b.pool.Put((*[32 << 10]byte)(p[:32<<10])) }

// Base wraps the RoundTripper that sends the requests upstream: the
// Transport calls it once a request has been admitted, which ends the
// request's wait (and MaxWait's deadline). Give it to
// pacehttp.Options.Base.
func Base(rt http.RoundTripper) http.RoundTripper { return admittedTransport{rt} }

// CloseUpgraded closes every upgraded connection (websockets) the proxy
// is copying now, ending their requests. An http.Server's Shutdown and
// Close leave such connections (hijacked) alone: call it with Close, once
// the grace is over.
func (p *Proxy) CloseUpgraded() {
	p.upMu.Lock()
	open := make([]*upgradeBody, 0, len(p.upgrades))
	for u := range p.upgrades {
		open = append(open, u)
	}
	p.upMu.Unlock()
	for _, u := range open {
		u.Close()
	}
}

// track notes that u is open (or no longer).
func (p *Proxy) track(u *upgradeBody, open bool) {
	p.upMu.Lock()
	defer p.upMu.Unlock()
	if !open {
		delete(p.upgrades, u)
		return
	}
	if p.upgrades == nil {
		p.upgrades = map[*upgradeBody]struct{}{}
	}
	p.upgrades[u] = struct{}{}
}

// Wait waits until no request is being served, or until ctx is done.
// Once the server in front of the proxy has stopped accepting, the
// requests it had taken finish by then, and their events have been told.
func (p *Proxy) Wait(ctx context.Context) error {
	p.activeMu.Lock()
	if p.active == 0 {
		p.activeMu.Unlock()
		return nil
	}
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	idle := p.idle
	p.activeMu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Proxy) enter() {
	p.activeMu.Lock()
	p.active++
	p.activeMu.Unlock()
}

func (p *Proxy) leave() {
	p.activeMu.Lock()
	p.active--
	if p.active == 0 && p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
	p.activeMu.Unlock()
}

// Stats returns what the proxy did so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	status := make(map[int]int64, len(p.status))
	for k, v := range p.status {
		status[k] = v
	}
	p.mu.Unlock()
	return Stats{
		Requests: p.requests.Load(), Status: status, Refused: p.refused.Load(),
		Waits: p.waits.Load(), WaitTime: time.Duration(p.waitTime.Load()),
		TooLong: p.tooLong.Load(), Gone: p.gone.Load(), Failed: p.failed.Load(), Unsent: p.unsent.Load(), Connect: p.connect.Load(), Stalled: p.stalled.Load(), DotPath: p.dotPath.Load(), Asterisk: p.asterisk.Load(), BadBody: p.badBody.Load(),
		InFlight: p.inFlight.Load(), Waiting: p.waitingN.Load(),
	}
}

// request is what the proxy knows of one request while it goes: put in
// its context.
type request struct {
	p      *Proxy
	start  time.Time
	state  atomic.Int32 // waiting, admitted or expired
	timer  *time.Timer  // MaxWait's, if any
	cancel context.CancelCauseFunc
	info   pacehttp.Info
	job    runner.Job // set once admitted, with OnEvent
	ctx    requestCtx
	// res and http are the result told to OnEvent, allocated with the
	// request rather than apart.
	res  runner.Result
	http runner.HTTPInfo
	// reported is set once OnEvent has been told how the request ended.
	reported atomic.Bool
	// upgraded is the connection of a request the upstream switched to
	// another protocol (101, a websocket), if any.
	upgraded *upgradeBody
	// uri is the request's target as the client sent it (see
	// redactedURL), host the host it addressed (clientHost).
	uri, host string
	// w is the client's ResponseWriter.
	w http.ResponseWriter
	// bodiless is the bodiless path's state.
	bodiless bodilessState
	// resend is the state of the request's second attempt, if any (see
	// resend.go): resendNone, or from resendWaiting on.
	resend atomic.Int32
	// gone is set (on the handler's goroutine) when the client went
	// away: it gets no answer (see ServeHTTP).
	gone bool
	// noSlot is set (on the handler's goroutine) when the request's wait
	// ended before it had one of the -j slots: the slots held it, not
	// the rules.
	noSlot bool
	// prev and next link the request in its proxy's stopList while it
	// is served; guarded by the list's mutex.
	prev, next *request
	// body is the request's body as the client sends it, nil if it has
	// none (stall.go).
	body *clientBody
	// send watches the body as it goes upstream, with Options.Timeout
	// (upload.go); nil if not.
	send *sendWatch
}

// bodyStalled reports whether rq's client stopped sending its body.
func (rq *request) bodyStalled() bool { return rq != nil && rq.body != nil && rq.body.isStalled() }

const (
	stateWaiting int32 = iota
	stateAdmitted
	stateExpired // MaxWait's deadline came first
	stateStopped // Stop came first
)

type requestKey struct{}

// requestCtx carries a request's *request: a context.WithValue without
// its allocation, the request being allocated anyway.
type requestCtx struct {
	context.Context
	rq *request
}

func (c *requestCtx) Value(key any) any {
	if key == (requestKey{}) {
		return c.rq
	}
	return c.Context.Value(key)
}

func requestOf(ctx context.Context) *request {
	r, _ := ctx.Value(requestKey{}).(*request)
	return r
}

// ServeHTTP admits r under the rules, then sends it upstream and streams
// the answer back.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 1 {
		// HTTP/2's preface ("PRI * HTTP/2.0"), which net/http's server
		// hands to its handler: a client that takes the proxy for an
		// HTTP/2 server (prior knowledge). Not a request: sent upstream,
		// it would spend a call on a method the upstream does not know.
		w.Header().Set("Connection", "close")
		plain(w, http.StatusHTTPVersionNotSupported, "pace proxy: HTTP/2 without TLS (prior knowledge) is not supported: send HTTP/1.1")
		return
	}
	p.requests.Add(1)
	p.enter()
	defer p.leave()
	if r.ProtoMinor == 0 {
		w = http10Writer{w}
	}
	if r.Method == http.MethodConnect {
		// A client told to use the proxy as HTTPS_PROXY: sent upstream,
		// the CONNECT would spend a call and fail there, obscurely.
		p.connect.Add(1)
		w.Header().Set("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
		plain(w, http.StatusMethodNotAllowed, "pace proxy: CONNECT is not supported: pace proxy is a reverse proxy for its --upstream; "+
			"send requests to it as to the upstream (the client's base URL), not through HTTP_PROXY or HTTPS_PROXY")
		return
	}
	if r.RequestURI == "*" {
		// The asterisk form names the server, not a resource, and only
		// for OPTIONS (RFC 9112, 3.2.4), which net/http answers itself:
		// joined to the upstream's path it would reach "/base/%2A".
		p.asterisk.Add(1)
		plain(w, http.StatusBadRequest, fmt.Sprintf("pace proxy: the target \"*\" is for OPTIONS only, not %s: send a path", runner.Printable(r.Method, false)))
		return
	}
	if seg, ok := dotSegment(r.URL.Path); ok {
		// The upstream resolves it: "/../admin" behind --upstream
		// https://host/v1/ reaches https://host/admin, with whatever
		// headers pace adds. Sent nowhere.
		p.dotPath.Add(1)
		plain(w, http.StatusBadRequest, fmt.Sprintf("pace proxy: the path %q has a %q segment, which could leave the upstream's path: send it resolved", r.URL.Path, seg))
		return
	}
	if p.stopCtx.Err() != nil {
		p.unsent.Add(1)
		plain(w, http.StatusServiceUnavailable, "pace proxy: stopping; not sending new requests upstream")
		return
	}
	rq := &request{p: p, uri: r.RequestURI, host: clientHost(r), w: w}
	if r.Body != nil && r.Body != http.NoBody {
		// The proxy's own wrappers go in a copy of the request: the
		// server reads its request's Body, by its type, to know what is
		// left of the body once the answer begins (net/http closes the
		// connection behind a 100-continue body never asked for, and
		// reads up to 256 KiB of another's for the next request). Given
		// a body of any other type, it read on for the next request
		// before writing the answer: a client waiting for 100 Continue
		// got no answer until it sent the body.
		r2 := *r
		r = &r2
		rq.body = &clientBody{src: r.Body, rc: http.NewResponseController(w), idle: p.opts.ClientTimeout}
		r.Body = rq.body
	}
	held, whole, err := p.readBody(r)
	defer p.unreserve(held)
	if err != nil {
		if rq.bodyStalled() {
			p.stalled.Add(1)
			p.stalledBody(w, r, false)
			return
		}
		// The client closed its connection or sent a malformed body: net/http
		// closes the connection once the handler returns, so the request
		// has nobody to answer. The 400 goes out if the client still reads.
		if clientGone(err) {
			p.gone.Add(1)
		} else {
			p.badBody.Add(1)
		}
		plain(w, http.StatusBadRequest, "pace proxy: reading the request body: "+err.Error())
		return
	}
	rq.start = time.Now()
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	rq.cancel = cancel
	if p.opts.MaxWait > 0 {
		if d := p.estimate(); d > p.opts.MaxWait {
			p.tooLong.Add(1)
			p.refuse(w, d)
			return
		}
		rq.timer = time.AfterFunc(p.opts.MaxWait, func() {
			if rq.state.CompareAndSwap(stateWaiting, stateExpired) {
				cancel(errTooLong)
			}
		})
		defer rq.timer.Stop()
	}
	if p.stopList.add(rq) {
		defer p.stopList.remove(rq)
	} else {
		rq.stopWaiting() // Stop came first
	}
	if !whole {
		defer watchHangup(r, rq)()
		if conn := leanhttp.ClientConn(r.Context()); conn != nil && !expectsContinue(r) {
			// Read the body while the request waits, so that a client
			// gone is seen even with much of its body unsent.
			d := p.startDrain(r.Body, rq.body, func(error) {
				if rq.state.Load() == stateWaiting {
					if rq.bodyStalled() {
						rq.cancel(errBodyStalled)
					} else {
						rq.cancel(errHungUp)
					}
				}
			})
			r.Body = d
			defer d.abort()
			// Nothing is admitted for a body that has not begun: a
			// client that sends its head and then nothing spends
			// nothing (and gets 408 after ClientTimeout).
			select {
			case <-d.begun:
			case <-ctx.Done():
			}
		}
	}
	if p.opts.Timeout > 0 && r.Body != nil && r.Body != http.NoBody {
		rq.send = watchSend(r.Body, p.opts.Timeout, cancel, expectsContinue(r))
		r.Body = rq.send
	}
	p.waitingN.Add(1)
	rq.ctx = requestCtx{Context: ctx, rq: rq}
	ctx = &rq.ctx
	ctx = pacehttp.WithInfo(ctx, &rq.info)
	if p.bodiless(r) {
		p.serveBodiless(w, r, ctx, rq)
	} else {
		p.rp.ServeHTTP(w, r.WithContext(ctx))
	}
	if rq.state.Load() != stateAdmitted {
		p.waitingN.Add(-1)
	}
	if rq.upgraded != nil {
		// The upgraded connection has been copied both ways until one
		// side closed it, or the switch failed: it is over, and its slot
		// comes back now (httputil.ReverseProxy closes it later, or, when
		// the switch fails, never).
		rq.upgraded.Close()
	}
	if rq.gone {
		// The client's connection ended its request (a close, or a
		// half-close: the same FIN) before its answer. A handler that
		// writes nothing gets an empty 200 from the server, which a
		// client that only half-closed reads as its answer: the
		// connection is closed without one instead.
		panic(http.ErrAbortHandler)
	}
}

// http10Writer is the ResponseWriter of an HTTP/1.0 request: it sends no
// 1xx answer (103 Early Hints, an upstream's 100 Continue), which HTTP/1.0
// does not have (RFC 9110, 15.2: a server must not send one to such a
// client); the client would take it for the final answer, and the real
// one for its body. net/http's server writes whatever status it is given.
type http10Writer struct{ http.ResponseWriter }

func (w http10Writer) WriteHeader(code int) {
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the server's writer (Flush,
// deadlines, Hijack).
func (w http10Writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// admitted ends rq's wait, unless MaxWait's deadline ended it first; it
// reports whether the request may go.
func (p *Proxy) admitted(rq *request, req *http.Request) bool {
	if !rq.state.CompareAndSwap(stateWaiting, stateAdmitted) {
		return false
	}
	p.waitingN.Add(-1)
	inFlight := p.inFlight.Add(1)
	if rq.timer != nil {
		rq.timer.Stop()
	}
	if waited := time.Since(rq.start); rq.info.Admission.Waited > 0 || waited > 10*time.Millisecond {
		p.waits.Add(1)
		p.waitTime.Add(int64(waited))
	}
	p.remember(rq.info.Admission)
	p.started(rq, req, inFlight)
	return true
}

// remember keeps a, an admission, for MaxWait's estimates, in the order
// of the instants the rules recorded (admissions return in about that
// order: a is put in its place from the end).
func (p *Proxy) remember(a throttle.Admission) {
	if p.opts.MaxWait <= 0 {
		return
	}
	c := throttle.Call{At: a.At, Cost: max(a.Cost, 1)}
	p.mu.Lock()
	i := len(p.past)
	for i > 0 && p.past[i-1].At.After(c.At) {
		i--
	}
	p.past = slices.Insert(p.past, i, c)
	p.trim(time.Now())
	p.mu.Unlock()
}

// trim forgets the admissions that no rule holds any more, a quarter of
// them at a time (so that the history is not shifted at every call; the
// few older ones left count for nothing). p.mu is held.
func (p *Proxy) trim(now time.Time) {
	keep := now.Add(-p.longest - time.Minute) // the margin, and rules learned since
	i, _ := slices.BinarySearchFunc(p.past, keep, func(c throttle.Call, t time.Time) int {
		if c.At.Before(t) {
			return -1
		}
		return 1
	})
	if i > 0 && i >= len(p.past)/4 {
		p.past = slices.Delete(p.past, 0, i)
	}
}

// estimate returns how long a request arriving now would wait for the
// rules, at least: the fastest legal schedule of the requests waiting
// before it and of itself, after the calls this proxy made, the server's
// pause and the margin. Other processes sharing the quota, and slots, may
// make the wait longer.
func (p *Proxy) estimate() time.Duration {
	now := time.Now()
	st := p.opts.Transport.Stats()
	rules := append([]throttle.Rule(nil), p.opts.Rules...)
	learned, _ := p.opts.Transport.Learned()
	rules = append(rules, learned...)
	valid := rules[:0]
	for _, r := range rules {
		r.Window += st.Margin
		if r.Valid() && !r.Cost { // cost rules: the costs of waiting requests are not known
			valid = append(valid, r)
		}
	}
	start := now
	if st.PausedUntil.After(start) {
		start = st.PausedUntil
	}
	k := int(p.waitingN.Load()) + 1
	scratch := make([]time.Time, k)
	p.mu.Lock()
	p.trim(now)
	last := lastAdmission(valid, p.past, k, start, now, scratch)
	p.mu.Unlock()
	return last.Sub(now)
}

// lastAdmission returns when the last of k calls of cost 1 would be
// admitted in the fastest legal FIFO schedule under count rules, after
// past (in order; any after now counted as made now), none before start:
// throttle.Plan's last instant, without copying, sorting or weighing the
// past. Under a rule of N per W, a call goes once the Nth call before it
// has left the window. at holds k instants, the schedule.
func lastAdmission(rules []throttle.Rule, past []throttle.Call, k int, start, now time.Time, at []time.Time) time.Time {
	for j := range k {
		t := start
		if j > 0 && at[j-1].After(t) {
			t = at[j-1]
		}
		for _, r := range rules {
			i := len(past) + j - r.N // the Nth call before this one
			if i < 0 {
				continue
			}
			var before time.Time
			if i < len(past) {
				if before = past[i].At; before.After(now) {
					before = now
				}
			} else {
				before = at[i-len(past)]
			}
			if free := before.Add(r.Window); free.After(t) {
				t = free
			}
		}
		at[j] = t
	}
	return at[k-1]
}

// refuse answers 429 with the Retry-After of a wait of d.
func (p *Proxy) refuse(w http.ResponseWriter, d time.Duration) {
	p.refuseFor(w, d, fmt.Sprintf("the rules would hold this request for more than --max-wait %s", p.opts.MaxWait))
}

// refuseFor answers 429 with a Retry-After of d, saying why.
func (p *Proxy) refuseFor(w http.ResponseWriter, d time.Duration, why string) {
	secs := max(int64((d+time.Second-1)/time.Second), 1)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	plain(w, http.StatusTooManyRequests, fmt.Sprintf("pace proxy: %s; retry after %ds", why, secs))
}

// answered counts the upstream's answer and logs the request.
func (p *Proxy) answered(resp *http.Response) {
	code := resp.StatusCode
	p.mu.Lock()
	p.status[code]++
	p.mu.Unlock()
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		p.refused.Add(1)
	}
	if p.opts.Log != nil && resp.Request != nil {
		req := resp.Request
		waited := time.Duration(0)
		if rq := requestOf(req.Context()); rq != nil {
			waited = time.Since(rq.start)
		}
		p.opts.Log(fmt.Sprintf("%s %s: %d (after %s)", req.Method, p.red.URL(req.URL), code, waited.Round(time.Millisecond)))
	}
}

// fail answers a request that got no answer from the upstream.
func (p *Proxy) fail(w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	rq := requestOf(ctx)
	state := stateWaiting
	if rq != nil {
		state = rq.state.Load()
	}
	admitted := state == stateAdmitted
	var long *learn.PolicyWaitTooLong
	switch {
	case state == stateExpired && rq.noSlot:
		p.tooLong.Add(1)
		p.refuseFor(w, max(p.estimate(), time.Second), fmt.Sprintf("all -j %d slots stayed busy for --max-wait %s", cap(p.slots), p.opts.MaxWait))
		return
	case state == stateExpired:
		p.tooLong.Add(1)
		p.refuse(w, max(p.estimate(), time.Second))
		return
	case state == stateStopped:
		p.unsent.Add(1)
		plain(w, http.StatusServiceUnavailable, "pace proxy: stopping; this request was not sent upstream")
		return
	case admitted && errors.Is(context.Cause(ctx), errUpstreamSlow):
		// Cancelled as the upstream took none of the body (upload.go),
		// not as the client went: answered 504 below.
		err = errUpstreamSlow
	case rq.bodyStalled() && !admitted:
		p.stalled.Add(1)
		p.stalledBody(w, r, false)
		return
	case rq.bodyStalled():
		p.finished(rq, nil, 0, p.bodyStalled())
		p.failed.Add(1)
		p.stalledBody(w, r, true)
		return
	case ctx.Err() != nil && !admitted:
		p.gone.Add(1) // nobody to answer
		if rq != nil {
			rq.gone = true
		}
		return
	case !admitted && errors.As(err, &long):
		// The rule the server publishes would hold the request longer
		// than the server may make anyone wait: its "stop" goes to the
		// client, as a refusal's does.
		p.tooLong.Add(1)
		p.refuseFor(w, long.Wait, fmt.Sprintf("the rule the server publishes, %s, would hold this request for %s, longer than --max-server-pause %s",
			long.Rule, long.Wait.Round(time.Second), long.Max))
		if p.opts.Log != nil {
			p.opts.Log(fmt.Sprintf("%s %s: %s", r.Method, p.red.URL(r.URL), p.red.Error(err)))
		}
		return
	case ctx.Err() != nil:
		why := errClientGone // the client went away mid-request
		if leanhttp.WriteStalled(ctx) {
			why = p.answerStalled() // a 1xx answer it did not take
		}
		p.finished(rq, nil, 0, why)
		rq.gone = true
		return
	}
	if admitted {
		p.finished(rq, nil, 0, err)
		p.failed.Add(1)
	} else {
		p.unsent.Add(1)
	}
	msg := p.red.Error(err).Error()
	var ne net.Error
	switch {
	case !admitted:
		plain(w, http.StatusServiceUnavailable, "pace proxy: the quota's store cannot admit requests: "+msg)
	case errors.As(err, &ne) && ne.Timeout():
		plain(w, http.StatusGatewayTimeout, "pace proxy: the upstream did not answer in time")
	default:
		plain(w, http.StatusBadGateway, "pace proxy: the upstream did not answer")
	}
	if p.opts.Log != nil {
		p.opts.Log(fmt.Sprintf("%s %s: %s", r.Method, p.red.URL(r.URL), msg))
	}
}

// plain answers a short text body of the proxy's own.
// dotSegment returns the first "." or ".." segment of path, a request's
// decoded path (so "%2e%2e" and "..%2f" count too), if it has one. A
// backslash separates segments too, as some servers (IIS) take it.
func dotSegment(path string) (string, bool) {
	for seg := range strings.FieldsFuncSeq(path, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == "." || seg == ".." {
			return seg, true
		}
	}
	return "", false
}

func plain(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	io.WriteString(w, msg+"\n")
}

// slotTransport takes a slot (FIFO) before the request is admitted, and
// gives it back when the response body is closed.
type slotTransport struct{ p *Proxy }

func (t slotTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := t.p
	ctx := req.Context()
	if p.slots != nil {
		select {
		case p.slots <- struct{}{}:
		default:
			select {
			case p.slots <- struct{}{}:
			case <-ctx.Done():
				if req.Body != nil {
					req.Body.Close()
				}
				if rq := requestOf(ctx); rq != nil {
					rq.noSlot = true
				}
				return nil, context.Cause(ctx)
			}
		}
	}
	resp, err := p.opts.Transport.RoundTrip(req)
	rq := requestOf(ctx)
	if err != nil && rq != nil && errors.Is(err, direct.ErrKeptConnLost) {
		resp, err = p.resend(rq, req, err)
	}
	if err != nil {
		p.release(rq)
		return nil, err
	}
	if rw, ok := resp.Body.(io.ReadWriteCloser); ok && resp.StatusCode == http.StatusSwitchingProtocols {
		u := &upgradeBody{rw: rw, p: p, rq: rq, resp: resp}
		resp.Body = u
		if rq != nil {
			rq.upgraded = u
		}
		p.track(u, true)
		return resp, nil
	}
	resp.Body = &slotBody{ReadCloser: resp.Body, p: p, rq: rq, resp: resp, ctx: ctx}
	return resp, nil
}

// release ends the request's time in flight, then gives back the slot:
// in the other order a request taking the slot at once counted one more
// in flight than -j allows.
func (p *Proxy) release(rq *request) {
	if rq != nil && rq.state.Load() == stateAdmitted {
		p.inFlight.Add(-1)
	}
	if p.slots != nil {
		<-p.slots
	}
}

// admittedTransport marks a request admitted, then sends it.
type admittedTransport struct{ rt http.RoundTripper }

func (t admittedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rq := requestOf(req.Context())
	if rq != nil && !rq.p.admitted(rq, req) && !rq.p.resendAdmitted(rq, req) {
		// MaxWait's deadline, or Stop, came as the admission returned.
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errTooLong
	}
	if rq != nil && rq.send != nil {
		rq.send.start()
		defer rq.send.end()
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &rq.send.trace))
	}
	return t.rt.RoundTrip(req)
}

// SendsOnce passes on the promise of the RoundTripper it wraps
// (pacehttp.Options.Base): a request it sends again only when none of
// it reached the upstream needs no resend guard, which costs pacehttp 8
// allocations and a reflective trace hook a request. False if rt makes
// no such promise.
func (t admittedTransport) SendsOnce(req *http.Request) bool {
	so, ok := t.rt.(interface{ SendsOnce(*http.Request) bool })
	return ok && so.SendsOnce(req)
}
