package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/runner/internal/leanhttp"
)

// What the proxy tells Options.OnEvent: each request admitted is one job
// of one attempt, numbered in the order of admission, so that the code
// that counts, logs and sums up a pool's jobs (pace's job log, progress,
// summary) does the same for a proxy's requests.

// Errors of a request that got no whole answer, in its Result.
var (
	errClientGone = errors.New("the client went away before the whole answer was sent")
	errBodyBroken = errors.New("the upstream's body broke off")
)

// started notes that rq, sent upstream as req, was admitted, and tells
// OnEvent. inFlight counts the requests admitted and not done, rq's
// included.
func (p *Proxy) started(rq *request, req *http.Request, inFlight int64) {
	if p.opts.OnEvent == nil {
		return
	}
	a := rq.info.Admission
	if rq.job.Seq != 0 { // sent again (resend.go): the same job's next attempt
		rq.job.Attempt++
		rq.job.Cost, rq.job.Admission = max(a.Cost, 1), a
	} else {
		url := p.redactedURL(rq, req)
		rq.job = runner.Job{Seq: p.seq.Add(1), Item: req.Method + " " + url, Attempt: 1,
			Argv: []string{req.Method, url}, Cost: max(a.Cost, 1), Admission: a}
	}
	p.emit(runner.Event{Kind: runner.JobStarted, Job: rq.job, Admission: a, InFlight: int(inFlight)})
}

// maxURLs bounds the redacted URLs a Proxy keeps, and maxURLBytes their
// text: past either they are all forgotten. A target longer than
// maxCachedURI (a search query, a cache-busting parameter) is redacted
// every time: clients seldom call it twice, and 4096 of them of 64 KiB
// each would hold half a gigabyte.
const (
	maxURLs      = 4096
	maxURLBytes  = 1 << 20
	maxCachedURI = 1024
)

// redactedURL returns the URL req, rq's request as sent upstream, goes
// to, redacted. Redacting a URL costs a request more than the rest of
// its report, and clients call few distinct URLs, so the result is kept
// by the target the client sent (RequestURI), which alone makes the URL
// upstream (the upstream being fixed).
func (p *Proxy) redactedURL(rq *request, req *http.Request) string {
	if rq.uri == "" || len(rq.uri) > maxCachedURI {
		return p.red.URL(req.URL)
	}
	p.urlMu.Lock()
	s, ok := p.urls[rq.uri]
	p.urlMu.Unlock()
	if ok {
		return s
	}
	s = p.red.URL(req.URL)
	p.urlMu.Lock()
	if p.urls == nil || len(p.urls) >= maxURLs || p.urlBytes >= maxURLBytes {
		p.urls, p.urlBytes = make(map[string]string), 0
	}
	p.urls[rq.uri] = s
	p.urlBytes += len(rq.uri) + len(s)
	p.urlMu.Unlock()
	return s
}

// finished tells OnEvent how an admitted request ended: resp is the
// upstream's answer (nil if none came), n the body bytes copied to the
// client, and err why the answer is not whole (nil if it is).
func (p *Proxy) finished(rq *request, resp *http.Response, n int64, err error) {
	if p.opts.OnEvent == nil || rq == nil || rq.job.Seq == 0 || !rq.reported.CompareAndSwap(false, true) {
		return
	}
	res := &rq.res
	p.result(rq, res, &rq.http, resp, n, err)
	inFlight := int(p.inFlight.Load())
	p.emit(runner.Event{Kind: runner.JobFinished, Job: rq.job, Result: res, InFlight: inFlight},
		runner.Event{Kind: runner.JobDone, Job: rq.job, Result: res, InFlight: inFlight})
}

// result fills res and h with how rq's attempt ended (as finished says).
func (p *Proxy) result(rq *request, res *runner.Result, h *runner.HTTPInfo, resp *http.Response, n int64, err error) {
	now := time.Now()
	a := rq.info.Admission
	*res = runner.Result{Job: rq.job, Start: a.At, Waited: a.Waited, Runtime: now.Sub(a.At), Sent: rq.info.Sent,
		Answered: rq.info.Answered, NewConn: rq.info.NewConn, Local: rq.info.Local, Cost: rq.info.Cost, ExitCode: -1}
	*h = runner.HTTPInfo{Method: rq.job.Argv[0], URL: rq.job.Argv[1], Bytes: n,
		PauseUntil: rq.info.PauseUntil, PauseReason: rq.info.PauseReason,
		Policy: rq.info.Policy, PolicyHeader: rq.info.PolicyHeader, RetryAfter: rq.info.RetryAfter}
	res.HTTP = h
	// The upstream's calls besides the request's own: attempts the
	// transport sent again (a proxy follows no redirect), of the same
	// URL.
	for _, hp := range rq.info.Hops {
		h.Hops = append(h.Hops, runner.Hop{Start: hp.At, Runtime: hp.Ended.Sub(hp.At), Cost: hp.Cost, Method: h.Method, URL: h.URL, Again: hp.Again})
	}
	if resp != nil {
		// The reason phrase is the upstream's text, printed in pace's
		// lines: it must not drive the terminal.
		h.StatusCode, h.Status, h.Proto = resp.StatusCode, runner.Printable(resp.Status, false), resp.Proto
	}
	var ne net.Error
	switch {
	case err == nil && resp != nil && resp.StatusCode < 400:
		res.ExitCode = 0 // the upstream answered, and not with an error: ok
	case err == nil && resp != nil:
		res.ExitCode = 1
		res.Err = fmt.Errorf("%s %s: HTTP %s", h.Method, h.URL, h.Status)
	case resp == nil && errors.As(err, &ne) && ne.Timeout():
		h.Conn = "timeout"
		res.Err = fmt.Errorf("%s %s: the upstream did not answer in time", h.Method, h.URL)
	case resp == nil && !errors.Is(err, errClientGone) && !errors.Is(err, errBodyStalled) && !errors.Is(err, errAnswerStalled):
		h.Conn = runner.ConnCause(err)
		res.Err = fmt.Errorf("%s %s: %w", h.Method, h.URL, p.red.Error(err))
	default:
		res.Err = fmt.Errorf("%s %s: %w", h.Method, h.URL, p.red.Error(err))
	}
}

// emit tells OnEvent of evs, one call at a time.
func (p *Proxy) emit(evs ...runner.Event) {
	p.evMu.Lock()
	defer p.evMu.Unlock()
	for _, ev := range evs {
		p.opts.OnEvent(ev)
	}
}

// slotBody is an admitted request's response body: it counts the bytes
// copied to the client and, once closed, releases the request's slot and
// reports how it ended.
type slotBody struct {
	io.ReadCloser
	p      *Proxy
	rq     *request
	resp   *http.Response
	ctx    context.Context
	n      int64
	eof    bool
	err    error // a read's error other than io.EOF
	closed bool
}

func (b *slotBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil && b.err == nil:
		b.err = err
	}
	return n, err
}

// Close closes the body, gives back the slot at once, then reports. The
// reverse proxy closes it once, from the request's goroutine.
func (b *slotBody) Close() error {
	err := b.ReadCloser.Close()
	if b.closed {
		return err
	}
	b.closed = true
	b.p.release(b.rq)
	var why error
	switch {
	case b.eof:
	case b.rq.bodyStalled():
		why = b.p.bodyStalled()
	case leanhttp.WriteStalled(b.ctx):
		why = b.p.answerStalled()
	case b.ctx.Err() != nil:
		why = errClientGone
	case b.err != nil:
		why = fmt.Errorf("%w: %w", errBodyBroken, b.err)
	default:
		why = errClientGone // the copy to the client failed
	}
	b.p.finished(b.rq, b.resp, b.n, why)
	return err
}

// upgradeBody is the body of an admitted request whose upstream switched
// protocols (101, a websocket): the upstream connection, read from and
// written to by the reverse proxy's two copies. The request holds its
// slot until it is closed, whichever side closed first; it counts the
// bytes that came from the upstream. Close may come from any goroutine,
// more than once.
type upgradeBody struct {
	rw   io.ReadWriteCloser
	p    *Proxy
	rq   *request
	resp *http.Response
	n    atomic.Int64
	once sync.Once
}

func (u *upgradeBody) Read(p []byte) (int, error) {
	n, err := u.rw.Read(p)
	u.n.Add(int64(n))
	return n, err
}

func (u *upgradeBody) Write(p []byte) (int, error) { return u.rw.Write(p) }

// Close closes the connection, gives back the slot, and reports the
// request as answered: an upgraded connection ends when either side
// closes it.
func (u *upgradeBody) Close() error {
	err := u.rw.Close()
	u.once.Do(func() {
		u.p.track(u, false)
		u.p.release(u.rq)
		u.p.finished(u.rq, u.resp, u.n.Load(), nil)
	})
	return err
}
