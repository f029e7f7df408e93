package throttle_test

import (
	"context"
	"time"

	. "github.com/pace-cli/pace/throttle"
)

// waitN admits a call of the given cost through l and releases it at
// once: for tests of the rates alone.
func waitN(l *Limiter, ctx context.Context, cost int) error {
	a, err := l.Admit(ctx, cost)
	if err == nil {
		a.Release()
	}
	return err
}

// allowN is AllowN, released at once.
func allowN(l *Limiter, t time.Time, cost int) bool {
	a, ok := l.AllowN(t, cost)
	if ok {
		a.Release()
	}
	return ok
}

// acquireOf returns l's admission of cost 1 as a function giving its
// release, the shape runJobs takes.
func acquireOf(l *Limiter) func(ctx context.Context) (func(), error) {
	return func(ctx context.Context) (func(), error) {
		a, err := l.Admit(ctx, 1)
		if err != nil {
			return nil, err
		}
		return a.Release, nil
	}
}
