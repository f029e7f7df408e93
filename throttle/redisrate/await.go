package redisrate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// await returns f's result or, as soon as ctx is cancelled, ctx's error,
// leaving f behind. go-redis bounds a call by its context's deadline but
// not by its cancellation: a Redis that accepts connections and never
// answers (stopped, or behind a link gone silent) held a caller who had
// given up (Ctrl-C) for the whole read timeout.
//
// f runs on a goroutine of its own, counted in calls until it returns
// (on the caller's once calls no longer starts any, Close has waited). A
// call left behind ends when Redis answers, at its read timeout or its
// context's deadline, or when the client is closed; its result then goes
// to left, if set, on that goroutine: a call that took something (a
// fleet-wide slot) gives it back there. Its command may still reach
// Redis and run: a script that records something then records it for a
// caller who is gone, which must be on the safe side.
//
// ctx's deadline does not end the wait: go-redis ends the call itself at
// that deadline, and a caller that retries must not have a try left
// behind overlap the next one. A ctx that can never be cancelled runs f
// on the caller's goroutine.
func await[T any](ctx context.Context, calls *goroutines, f func() (T, error), left func(T, error)) (T, error) {
	if ctx.Done() == nil {
		return f()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	var claimed atomic.Bool // by the caller who left, or by f's goroutine once it has a result
	if !calls.Go(func() {
		v, err := f()
		if claimed.CompareAndSwap(false, true) {
			ch <- result{v, err}
			return
		}
		if left != nil {
			left(v, err)
		}
	}) {
		return f()
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
	}
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) && claimed.CompareAndSwap(false, true) {
		var zero T
		return zero, err
	}
	r := <-ch // the result came as ctx ended, or the deadline: it is coming
	return r.v, r.err
}

// goroutines counts the goroutines that make calls to Redis on their own
// (calls a caller may leave behind, releases sent in the background), so
// that Close can wait for them once it has closed the client. Once Wait
// has been called none starts. It is safe for concurrent use.
type goroutines struct {
	mu      sync.Mutex
	wg      sync.WaitGroup
	waiting bool
}

// Go runs f on a goroutine of its own and reports true, or reports false
// and runs nothing once Wait has been called. A nil g counts nothing.
func (g *goroutines) Go(f func()) bool {
	if g == nil {
		go f()
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.waiting {
		return false
	}
	g.wg.Go(f)
	return true
}

// Wait stops goroutines from starting and waits until those started have
// returned.
func (g *goroutines) Wait() {
	g.mu.Lock()
	g.waiting = true
	g.mu.Unlock()
	g.wg.Wait()
}

// detach returns a context with ctx's values and deadline that ctx's
// cancellation does not end: for a call that must be sent even if its
// caller has given up (see await, which ends the caller's wait).
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	d := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(d, dl)
	}
	return d, func() {}
}
