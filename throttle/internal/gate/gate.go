// Package gate holds what the shared backends of package throttle
// (redisrate, localstore) do alike between their store's decisions:
// sleeping out a wait until the backend closes, the jitter that spreads
// processes woken by the same expiry, and the pause a server's 429 sets.
package gate

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// Usable returns why a new admission cannot start, if it cannot: ctx is
// done, or closed (closed when the backend closes) is.
func Usable(ctx context.Context, closed <-chan struct{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-closed:
		return throttle.ErrClosed
	default:
		return nil
	}
}

// Sleep waits d, or until ctx is done (its error) or closed is closed
// (throttle.ErrClosed).
func Sleep(ctx context.Context, closed <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return throttle.ErrClosed
	}
}

// Jitter returns a random delay in [0, min(5% of wait, most)].
func Jitter(wait, most time.Duration) time.Duration {
	j := min(wait/20, most)
	if j <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(j) + 1))
}

// Pause is a pause a server set: this process admits nothing before
// Until, whatever the store says. Reason says why, for diagnostics. Its
// methods need the backend's lock.
type Pause struct {
	Until  time.Time
	Reason string
}

// Extend makes the pause last until t, for reason, unless it already lasts
// as long or t has passed: a pause never shortens one in force. It
// reports whether it did.
func (p *Pause) Extend(t time.Time, reason string) bool {
	if !t.After(p.Until) || !t.After(time.Now()) {
		return false
	}
	p.Until, p.Reason = t, reason
	return true
}
