package redisrate

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// lease is a fleet-wide slot held by this process: a member of the
// quota's slots set whose score is the lease's expiry, renewed every
// Lease/3 by a goroutine until released.
type lease struct {
	id   string
	stop chan struct{} // closed on release: stops the renewer
	done chan struct{} // closed once the renewer has stopped (or never ran)
	once sync.Once
}

// slotArgs returns the arguments of slotsLua for op on lease id.
func (l *Limiter) slotArgs(op, id string) []any {
	return []any{op, id, l.cf.GlobalJobs, l.cf.Lease.Microseconds(), time.Now().UnixMicro()}
}

// TrySlot takes one of the fleet-wide slots if one is free, and starts
// renewing its lease; if none is, it says to ask again when the earliest
// lease would expire, or after the poll interval if that comes first
// (slots are mostly freed by release, which nobody announces). It
// implements gate.Store.
func (rs *redisSide) TrySlot(ctx context.Context, attempt uint64) (any, bool, time.Duration, error) {
	l := (*Limiter)(rs)
	id := l.idPrefix + ".s" + strconv.FormatUint(attempt, 36)
	reply, err := l.run(ctx, slotsScript(), []string{l.slotKey}, l.slotArgs("take", id), func(reply any, err error) {
		// The caller gave up while Redis had not answered: a slot the
		// take got after all goes back at once (else at its lease's end).
		if ok, _, perr := parseTakeReply(reply); err == nil && perr == nil && ok {
			l.sendRelease(id)
		}
	})
	if err != nil {
		return nil, false, 0, err
	}
	ok, wait, err := parseTakeReply(reply)
	if err != nil {
		return nil, false, 0, fmt.Errorf("redisrate: quota %q: %w: %w", l.name, throttle.ErrBackend, err)
	}
	if !ok {
		return nil, false, min(wait, l.cf.slotPoll), nil
	}
	ls := &lease{id: id, stop: make(chan struct{}), done: make(chan struct{})}
	l.renewMu.Lock()
	if l.core.IsClosed() {
		l.renewMu.Unlock()
		close(ls.done) // no renewer
		l.release(ctx, ls)
		return nil, false, 0, throttle.ErrClosed
	}
	l.renewers.Add(1)
	l.renewMu.Unlock()
	go l.renew(ls)
	return ls, true, 0, nil
}

// ReleaseSlot gives a lease back; it implements gate.Store.
func (rs *redisSide) ReleaseSlot(ctx context.Context, slot any) {
	(*Limiter)(rs).release(ctx, slot.(*lease))
}

// renew extends ls every Lease/3 until it is released or the limiter
// closed. A renewal that fails is tried again at the next tick; a lease
// found expired is taken again if a slot is free. Either way an expired
// lease is counted as lost, once: while it had run out, any process could
// take its slot (and may have given it back before this renewal), so the
// fleet may have run more jobs than the cap. A renewal still unanswered
// once Close has given the slots back is left behind.
func (l *Limiter) renew(ls *lease) {
	defer l.renewers.Done()
	defer close(ls.done)
	every := max(l.cf.Lease/3, time.Millisecond)
	keys := []string{l.slotKey}
	t := time.NewTicker(every)
	defer t.Stop()
	lost := false
	for {
		select {
		case <-t.C:
		case <-ls.stop:
			return
		case <-l.core.Closed():
			return
		}
		ctx, cancel := context.WithTimeout(l.life, every)
		reply, err := l.eval(ctx, slotsScript(), keys, l.slotArgs("renew", ls.id), nil)
		cancel()
		if l.life.Err() != nil {
			return
		}
		if err != nil {
			l.failures.Add(1)
			continue
		}
		if a, ok := reply.([]any); ok && len(a) > 0 && (a[0] == int64(0) || a[0] == int64(2)) && !lost {
			lost = true
			l.leasesLost.Add(1)
		}
	}
}

// release gives ls back, once: it stops the renewer and, once the renewer
// has stopped (a renewal landing after the release would take the slot
// again), sends the release. It makes one attempt: if Redis does not
// answer, the slot stays taken until its lease runs out. The caller waits
// for it at most until ctx is done (see releaseContext); the release goes
// on without it.
func (l *Limiter) release(ctx context.Context, ls *lease) {
	ls.once.Do(func() {
		close(ls.stop)
		ctx, cancel := l.releaseContext(ctx)
		defer cancel()
		sent := make(chan struct{})
		send := func() {
			defer close(sent)
			<-ls.done
			l.sendRelease(ls.id)
		}
		if !l.calls.Go(send) {
			send() // Close has closed the client: it fails at once
		}
		select {
		case <-sent:
		case <-ctx.Done():
		}
	})
}

// releaseWait is the longest a release is waited for: as long as a call
// may go unanswered before Redis is reported as not answering.
const releaseWait = stallAfter

// releaseContext returns the context a release is waited for under: ctx,
// for at most releaseWait, and done at once while Redis is reported not
// answering, so that no caller (a job that ended, Close after Ctrl-C)
// waits on a silent Redis for its read timeout.
func (l *Limiter) releaseContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, releaseWait)
	if l.health.isDown() {
		cancel()
	}
	return ctx, cancel
}

// sendRelease gives the lease id back in Redis, on the caller's
// goroutine: one attempt, bounded; a failure is counted, and the slot then
// stays taken until its lease runs out.
func (l *Limiter) sendRelease(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), min(l.cf.Timeout, 5*time.Second))
	defer cancel()
	if _, err := l.evalNow(ctx, slotsScript(), []string{l.slotKey}, l.slotArgs("release", id)); err != nil {
		l.failures.Add(1)
	}
}

// parseTakeReply decodes the reply of slotsLua's take.
func parseTakeReply(v any) (ok bool, wait time.Duration, err error) {
	a, isSlice := v.([]any)
	if !isSlice || len(a) < 3 {
		return false, 0, fmt.Errorf("unexpected script reply %v", v)
	}
	switch code, _ := a[0].(int64); {
	case code == 1:
		return true, 0, nil
	case code == 0 && len(a) == 4:
		us, isInt := a[3].(int64)
		if !isInt {
			break
		}
		return false, time.Duration(us) * time.Microsecond, nil
	}
	return false, 0, fmt.Errorf("unexpected script reply %v", v)
}
