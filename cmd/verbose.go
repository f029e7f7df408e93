package cmd

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// newLogger returns the --verbose logger writing to w.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.String(slog.TimeKey, a.Value.Time().Format("15:04:05.000"))
			}
			return a
		},
	}))
}

// loggingLimiter logs every admission that had to wait: how long and on
// which rule. The pool admits one job at a time, so the change in the
// limiter's statistics across one Acquire belongs to that admission.
type loggingLimiter struct {
	Limiter
	log   *slog.Logger
	clock throttle.Clock
}

// Acquire acquires from the wrapped limiter and logs the wait.
func (l *loggingLimiter) Acquire(ctx context.Context) (func(), error) {
	_, release, err := l.Admit(ctx)
	return release, err
}

// Admit admits through the wrapped limiter, logs the wait, and passes on
// the admission instant.
func (l *loggingLimiter) Admit(ctx context.Context) (time.Time, func(), error) {
	before := l.Stats()
	t0 := l.clock.Now()
	at, release, err := admit(ctx, l.Limiter)
	if err != nil {
		return at, release, err
	}
	if waited := l.clock.Now().Sub(t0); waited > 0 {
		l.log.Info("waited", "rule", waitedOn(before, l.Stats()), "wait", waited.Round(time.Microsecond))
	}
	return at, release, nil
}

// waitedOn names what an admission waited on, from the statistics before
// and after it: the rule whose wait time grew most, the in-flight cap, or
// a pause.
func waitedOn(before, after throttle.Stats) string {
	best, bestGrowth := "", time.Duration(0)
	for i, r := range after.Rules {
		if i >= len(before.Rules) {
			break
		}
		if g := r.WaitTime - before.Rules[i].WaitTime; g > bestGrowth {
			best, bestGrowth = r.Rule.String(), g
		}
	}
	if g := after.SlotWaitTime - before.SlotWaitTime; g > bestGrowth {
		best, bestGrowth = "in-flight cap", g
	}
	if g := after.PausedFor - before.PausedFor; g > bestGrowth {
		best = "pause: " + after.PauseReason
	}
	if best == "" {
		best = "queue"
	}
	return best
}
