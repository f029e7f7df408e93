package proxy

import (
	"context"
	"net/http"
	"time"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle/pacehttp"
)

// Sending a request again when the upstream drops a kept connection.
//
// An upstream closes a kept-alive connection once it has been idle for
// its keep-alive timeout; a request written on it at that instant meets
// the close, and the proxy reads EOF or a reset where the answer should
// be. The direct path (direct.Transport) finds a connection closed while
// idle before it writes, but not one closed as it writes, and it does
// not send such a request again: the upstream may have read it (a close
// racing the write looks the same as a server that read the request and
// dropped it), and a call sent again is a call the rules did not admit.
// The client got 502 for it.
//
// So the proxy sends it again itself, once, as a second call admitted
// under the rules (as pacehttp admits net/http's Transport's own resends
// of a replayable request): only a request on the direct path (GET,
// HEAD, OPTIONS, TRACE without a body), only when not a byte of an
// answer came on a kept connection (direct.ErrKeptConnLost), on the
// request's slot. Its wait is bounded as the first one's: MaxWait and
// Stop give it up, and the client then gets the 502 it would have got.
// It is told as a pool tells a retry: the first attempt's JobFinished
// with Retry (its row in the job log: the upstream may have counted it),
// then JobStarted, JobFinished and JobDone of attempt 2; or, given up, a
// JobDone with RetryDropped.

const (
	resendNone     int32 = iota
	resendWaiting        // the second attempt waits for its admission
	resendAdmitted       // and was admitted
	resendDropped        // MaxWait, Stop or the client ended its wait first
)

// resend sends req, whose first attempt (admitted, rq's) failed with
// lost (direct.ErrKeptConnLost), a second time, admitted again. It
// returns the second attempt's answer, or lost if it was not sent.
func (p *Proxy) resend(rq *request, req *http.Request, lost error) (*http.Response, error) {
	if rq.state.Load() != stateAdmitted || req.Context().Err() != nil || !rq.resend.CompareAndSwap(resendNone, resendWaiting) {
		return nil, lost
	}
	first := p.attemptFailed(rq, lost)
	// The second attempt reports to an Info of its own: when it was
	// sent, how it was admitted.
	rq.info = pacehttp.Info{}
	ctx, cancel := context.WithCancel(req.Context())
	giveUp := func() {
		if rq.resend.CompareAndSwap(resendWaiting, resendDropped) {
			cancel()
		}
	}
	if p.opts.MaxWait > 0 {
		t := time.AfterFunc(p.opts.MaxWait, giveUp)
		defer t.Stop()
	}
	defer context.AfterFunc(p.stopCtx, giveUp)()
	resp, err := p.opts.Transport.RoundTrip(req.WithContext(pacehttp.WithInfo(ctx, &rq.info)))
	if rq.resend.CompareAndSwap(resendWaiting, resendDropped) || rq.resend.Load() == resendDropped {
		// Not admitted (the base, admittedTransport, was not called): the
		// client gone, MaxWait, Stop, or the quota's store.
		cancel()
		if err == nil { // unreachable: nothing was sent
			resp.Body.Close()
		}
		p.retryDropped(rq, first)
		return nil, lost
	}
	// Admitted: ctx lives as long as the answer, and ends with the
	// request's own context when ServeHTTP returns.
	return resp, err
}

// resendAdmitted ends the wait of rq's second attempt, unless it was
// given up first, and tells OnEvent it started; it reports whether the
// attempt may go.
func (p *Proxy) resendAdmitted(rq *request, req *http.Request) bool {
	if !rq.resend.CompareAndSwap(resendWaiting, resendAdmitted) {
		return false
	}
	p.remember(rq.info.Admission)
	p.started(rq, req, p.inFlight.Load())
	return true
}

// attemptFailed tells OnEvent that rq's first attempt ended with err and
// will be tried again, and returns its result (nil without OnEvent).
func (p *Proxy) attemptFailed(rq *request, err error) *runner.Result {
	if p.opts.OnEvent == nil || rq.job.Seq == 0 {
		return nil
	}
	res := new(runner.Result)
	p.result(rq, res, new(runner.HTTPInfo), nil, 0, err)
	p.emit(runner.Event{Kind: runner.JobFinished, Job: rq.job, Result: res, Retry: true, InFlight: int(p.inFlight.Load())})
	return res
}

// retryDropped tells OnEvent that the retry of rq, whose first attempt
// ended as first says, was given up: first is its final result.
func (p *Proxy) retryDropped(rq *request, first *runner.Result) {
	if first == nil || !rq.reported.CompareAndSwap(false, true) {
		return
	}
	p.emit(runner.Event{Kind: runner.JobDone, Job: first.Job, Result: first, RetryDropped: true, InFlight: int(p.inFlight.Load())})
}
