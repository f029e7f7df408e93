package command

import (
	"context"
	"sync"
	"time"
)

// timeouts are the running jobs' --timeout timers. They are held while the
// jobs are stopped (Ctrl-Z: SignalRunning with SIGSTOP, then SIGCONT), so
// that a job's timeout counts the time it could run, not the time it sat
// stopped with pace.
type timeouts struct {
	mu   sync.Mutex
	m    map[*timeout]struct{}
	held bool // between hold and release
}

// timeout is one job's timer: it cancels the job's context with errTimeout
// at deadline, and while held it keeps the time it had left instead.
type timeout struct {
	t        *time.Timer
	deadline time.Time
	left     time.Duration // > 0 while held
}

// start returns ctx with a timeout of d, which hold and release pause and
// resume, and the function that ends it.
func (ts *timeouts) start(ctx context.Context, d time.Duration) (context.Context, func()) {
	jctx, cancel := context.WithCancelCause(ctx)
	to := &timeout{deadline: time.Now().Add(d)}
	ts.mu.Lock()
	if ts.m == nil {
		ts.m = map[*timeout]struct{}{}
	}
	ts.m[to] = struct{}{}
	to.t = time.AfterFunc(d, func() { cancel(errTimeout) })
	if ts.held {
		// A job that starts while the others are stopped is stopped too
		// (groups.add): its time waits with theirs.
		to.t.Stop()
		to.left = d
	}
	ts.mu.Unlock()
	return jctx, func() {
		ts.mu.Lock()
		delete(ts.m, to)
		to.t.Stop()
		ts.mu.Unlock()
		cancel(context.Canceled)
	}
}

// hold stops every running timer and keeps the time it had left; one that
// has fired already stays fired.
func (ts *timeouts) hold() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.held = true
	now := time.Now()
	for to := range ts.m {
		if to.left == 0 && to.t.Stop() {
			to.left = max(to.deadline.Sub(now), time.Nanosecond)
		}
	}
}

// release starts again each timer hold stopped, with the time it had left.
func (ts *timeouts) release() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.held = false
	now := time.Now()
	for to := range ts.m {
		if to.left > 0 {
			to.deadline = now.Add(to.left)
			to.t.Reset(to.left)
			to.left = 0
		}
	}
}
