package redisrate

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/internal/gate"
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

// takeSlot takes one of the fleet-wide slots, waiting FIFO behind this
// process's earlier callers, and starts renewing its lease. A caller that
// finds every slot taken asks again when the earliest lease would expire,
// or after the poll interval if that comes first (slots are mostly freed by
// release, which nobody announces). Only a caller that found every slot
// taken counts as having waited.
func (l *Limiter) takeSlot(ctx context.Context) (*lease, error) {
	if err := gate.Usable(ctx, l.closed); err != nil {
		return nil, err
	}
	arrived := time.Now()
	if err := l.slotTurn.Lock(ctx, l.closed); err != nil {
		return nil, err
	}
	defer l.slotTurn.Unlock()
	keys := []string{l.slotKey}
	id := l.idPrefix + ".s" + strconv.FormatUint(l.seq.Add(1), 36)
	waited := false
	for {
		reply, err := l.run(ctx, slotsScript, keys, l.slotArgs("take", id))
		if err != nil {
			return nil, err
		}
		ok, wait, err := parseTakeReply(reply)
		if err != nil {
			return nil, fmt.Errorf("redisrate: quota %q: %w: %w", l.name, throttle.ErrBackend, err)
		}
		if ok {
			break
		}
		waited = true
		d := min(wait, l.cf.slotPoll)
		if err := gate.Sleep(ctx, l.closed, d+gate.Jitter(d, l.cf.Jitter)); err != nil {
			// The slot may have been taken by a reply that never arrived;
			// its lease then runs out on its own.
			return nil, err
		}
	}
	ls := &lease{id: id, stop: make(chan struct{}), done: make(chan struct{})}
	l.mu.Lock()
	if l.isClosed {
		l.mu.Unlock()
		close(ls.done) // no renewer
		l.release(ls)
		return nil, throttle.ErrClosed
	}
	if waited {
		l.slotWaits++
		l.slotWait += time.Since(arrived)
	}
	l.renewers.Add(1)
	l.mu.Unlock()
	go l.renew(ls)
	return ls, nil
}

// renew extends ls every Lease/3 until it is released or the limiter
// closed. A renewal that fails is tried again at the next tick; a lease
// found expired is taken again if a slot is free, else counted as lost.
func (l *Limiter) renew(ls *lease) {
	defer l.renewers.Done()
	defer close(ls.done)
	every := max(l.cf.Lease/3, time.Millisecond)
	keys := []string{l.slotKey}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ls.stop:
			return
		case <-l.closed:
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		reply, err := l.eval(ctx, slotsScript, keys, l.slotArgs("renew", ls.id))
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
// answer, the slot stays taken until its lease runs out. It first waits
// for the renewer to stop: a renewal landing after the release would take
// the slot again.
func (l *Limiter) release(ls *lease) {
	ls.once.Do(func() {
		close(ls.stop)
		<-ls.done
		ctx, cancel := context.WithTimeout(context.Background(), min(l.cf.Timeout, 5*time.Second))
		defer cancel()
		if _, err := l.eval(ctx, slotsScript, []string{l.slotKey}, l.slotArgs("release", ls.id)); err != nil {
			l.failures.Add(1)
		}
	})
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
