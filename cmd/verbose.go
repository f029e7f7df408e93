package cmd

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/pace-cli/pace/internal/progress"
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
// what. A FIFO pool admits one job at a time, so the change in the
// backend's statistics across one Admit belongs to that admission (with
// a shared quota, admissions queued together overlap, but what they
// waited on is what the head of the queue slept on, and the largest
// change still names it); with --allow-reorder admissions overlap, and
// what each waited on cannot be told apart (reorder set): the log says
// how long only.
type loggingLimiter struct {
	throttle.Backend
	log     *slog.Logger
	reorder bool
}

// Admit admits through the backend and logs the wait.
func (l loggingLimiter) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	before := l.Stats()
	a, err := l.Backend.Admit(ctx, cost)
	if err != nil {
		return a, err
	}
	if a.Waited >= time.Millisecond {
		returned := time.Now()
		after := l.Stats()
		on := progress.WaitedOn(before, after)
		if l.reorder {
			on = "rules, slots or a pause (admissions overlap with --allow-reorder)"
		}
		l.log.Info("waited", "on", on, "wait", a.Waited.Round(time.Microsecond), "margin", after.Margin.Round(time.Millisecond))
		// The call was recorded before the backend returned: logging it
		// (a write to stderr) delays its leaving too.
		a.Latency += time.Since(returned)
	}
	return a, nil
}
