package redisrate

import (
	"context"
	"fmt"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// repairChunk is the most calls one repair script call records again: a
// window's worth of a large log is sent in several calls, none of which
// holds Redis long.
const repairChunk = 1000

// resetKey returns the key where pace quota reset leaves the instant of
// the reset of quota name (see resetLua).
func resetKey(name string) string { return "pace:{" + name + "}:reset" }

// repair records again, in a quota Redis lost (admitLua answered lost),
// the admissions of this process that a rule still counts, with the
// fleet's margin and this process's margin as an admission would, and
// returns how many calls it recorded again; last is the latest admission
// that admitLua found lost (µs). It is safe to run again for
// the same loss (repairLua), and it retries as an admission does. Once it
// succeeds, the next attempt does not check the latest admission again.
func (l *Limiter) repair(ctx context.Context, margin time.Duration, last int64) (int, error) {
	calls, buckets := l.mem.snapshot()
	ws, ttl, own, ownTTL := l.windows(margin)
	head := []any{l.spec, int64(0), ttl, own, ownTTL, l.marginField(own), 0, 0, last}
	for j, i := range l.order {
		head = append(head, ws[j], l.mode(l.rules[i]))
	}
	inLogs, inCounter := 0, 0
	for first := true; first || len(calls) > 0; first = false {
		n := min(len(calls), repairChunk)
		args := append(make([]any, 0, len(head)+3*n+4*len(buckets)), head...)
		args[1] = time.Now().UnixMicro()
		args[6] = n
		for _, c := range calls[:n] {
			args = append(args, l.memberID(c.id), c.at, c.cost)
		}
		calls = calls[n:]
		if first {
			// The counters whole in the first call: repairLua marks a
			// counter repaired once.
			args[7] = len(buckets)
			for _, b := range buckets {
				args = append(args, b.rule+1, b.bucket, b.weight, b.calls)
			}
		}
		reply, err := l.run(ctx, repairScript(), l.admitKeys, args, nil)
		if err != nil {
			return 0, err
		}
		a, ok := reply.([]any)
		if ok && len(a) == 2 {
			if code, _ := a[0].(int64); code == -1 {
				stored, _ := a[1].(string)
				return 0, l.mismatch(stored)
			}
		}
		if !ok || len(a) != 4 {
			return 0, fmt.Errorf("redisrate: quota %q: unexpected reply %v: %w", l.name, reply, throttle.ErrBackend)
		}
		logs, _ := a[2].(int64)
		counter, _ := a[3].(int64)
		inLogs += int(logs)
		inCounter = max(inCounter, int(counter))
	}
	l.mem.repaired()
	return max(inLogs, inCounter), nil
}
