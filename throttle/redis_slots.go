package throttle

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// redisLease is a fleet-wide slot held by this process: a member of the
// quota's slots set whose score is the lease's expiry, renewed every lease/3
// by a goroutine until released.
type redisLease struct {
	id   string
	stop chan struct{} // closed on release: stops the renewer
	once sync.Once
}

// slotArgs returns the arguments of redisSlotsLua for op on lease id.
func (l *RedisLimiter) slotArgs(op, id string) []any {
	return []any{op, id, l.cf.globalJobs, l.cf.lease.Microseconds(), l.clock.Now().UnixMicro()}
}

// takeSlot takes one of the fleet-wide slots, waiting FIFO behind this
// process's earlier callers, and starts renewing its lease. A caller that
// finds every slot taken asks again when the earliest lease would expire,
// or after the poll interval if that comes first (slots are mostly freed by
// release, which nobody announces).
func (l *RedisLimiter) takeSlot(ctx context.Context) (*redisLease, error) {
	if err := l.usable(ctx); err != nil {
		return nil, err
	}
	arrived := l.clock.Now()
	if err := l.slotTurn.lock(ctx, l.closed); err != nil {
		return nil, err
	}
	defer l.slotTurn.unlock()
	keys := []string{l.slotKey}
	id := l.newID()
	waited := arrived.Before(l.clock.Now())
	for {
		reply, err := l.run(ctx, redisSlots, keys, l.slotArgs("take", id))
		if err != nil {
			return nil, err
		}
		ok, wait, err := parseTakeReply(reply)
		if err != nil {
			return nil, fmt.Errorf("throttle: redis quota %q: %w: %w", l.name, ErrBackend, err)
		}
		if ok {
			break
		}
		waited = true
		d := min(wait, l.cf.slotPoll)
		if err := l.sleep(ctx, d+l.jitter(d)); err != nil {
			// The slot may have been taken by a reply that never arrived;
			// its lease then runs out on its own.
			return nil, err
		}
	}
	ls := &redisLease{id: id, stop: make(chan struct{})}
	l.mu.Lock()
	if l.isClosed {
		l.mu.Unlock()
		l.release(ls)
		return nil, ErrLimiterClosed
	}
	if waited {
		l.slotWaits++
		l.slotWait += max(l.clock.Now().Sub(arrived), 0)
	}
	l.leases[ls] = struct{}{}
	l.renewers.Add(1)
	l.mu.Unlock()
	go l.renew(ls)
	return ls, nil
}

// renew extends ls every lease/3 until it is released or the limiter
// closed. A renewal that fails is tried again at the next tick; a lease
// found expired is taken again if a slot is free, else counted as lost.
func (l *RedisLimiter) renew(ls *redisLease) {
	defer l.renewers.Done()
	every := max(l.cf.lease/3, time.Millisecond)
	keys := []string{l.slotKey}
	for {
		t := l.clock.NewTimer(every)
		select {
		case <-t.C():
		case <-ls.stop:
			t.Stop()
			return
		case <-l.closed:
			t.Stop()
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		reply, err := l.eval(ctx, redisSlots, keys, l.slotArgs("renew", ls.id))
		cancel()
		if err != nil {
			l.failures.Add(1)
			continue
		}
		if a, ok := reply.([]any); ok && len(a) > 0 && a[0] == int64(0) {
			l.leasesLost.Add(1)
		}
	}
}

// release gives ls back, once. It makes one attempt: if Redis does not
// answer, the slot stays taken until its lease runs out.
func (l *RedisLimiter) release(ls *redisLease) {
	ls.once.Do(func() {
		close(ls.stop)
		l.mu.Lock()
		delete(l.leases, ls)
		l.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), min(l.cf.timeout, 5*time.Second))
		defer cancel()
		if _, err := l.eval(ctx, redisSlots, []string{l.slotKey}, l.slotArgs("release", ls.id)); err != nil {
			l.failures.Add(1)
		}
	})
}

// parseTakeReply decodes the reply of redisSlotsLua's take.
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
