package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// openBackend makes the limiter a run's options ask for: the in-memory
// limiter, or the Redis-backed one with --redis. It is the default of
// Factory.OpenBackend. Messages about the backend (Redis outages) go to w.
// A Redis backend checks its rules against the ones stored in Redis before
// it returns, which may take up to --redis-timeout while Redis does not
// answer; ctx cuts that short.
func openBackend(ctx context.Context, o *CommonOptions, w io.Writer) (throttle.Backend, error) {
	if o.Redis.URL == "" {
		opts := []throttle.Option{throttle.WithMargin(o.Margin)}
		if o.Reorder {
			opts = append(opts, throttle.WithReorder())
		}
		return throttle.New(o.allRules(), opts...)
	}
	// go-redis logs some failures on stderr by itself, outside pace's
	// control of what is printed; pace reports Redis trouble itself. The
	// logger is go-redis's process-wide setting, and only main gets here.
	redis.SetLogger(quietRedisLogger{})
	url := redisrate.RedactURL(o.Redis.URL)
	out := &outageWriter{w: w, url: url, timeout: o.Redis.Timeout}
	if o.Verbose {
		fmt.Fprintf(w, "pace: redis: quota %q at %s\n", o.Redis.Key, url)
	}
	b, err := redisrate.Dial(ctx, o.Redis.URL, redisrate.Options{
		Key:        o.Redis.Key,
		Rules:      o.allRules(),
		Margin:     o.Margin,
		GlobalJobs: o.Redis.GlobalJobs,
		Timeout:    o.Redis.Timeout,
		OnOutage:   out.report,
	})
	var mismatch *redisrate.MismatchError
	switch {
	case errors.As(err, &mismatch):
		return nil, fmt.Errorf("redis quota %q at %s is kept with rules %q, this process has %q: "+
			"give every process sharing --key the same -r and --global-jobs, use another --key, "+
			"or wait until the quota has been unused for its longest window: %w",
			mismatch.Key, url, mismatch.Stored, mismatch.Spec, throttle.ErrRuleMismatch)
	case err != nil:
		return nil, fmt.Errorf("redis %s: %w", url, err)
	}
	return namedBackend{Backend: b, name: "redis " + url}, nil
}

// namedBackend puts the backend's name (a redacted Redis URL) in front of
// its admission errors, so that a failure in the middle of a run says
// where, as one at the start does.
type namedBackend struct {
	throttle.Backend
	name string
}

func (b namedBackend) Admit(ctx context.Context, cost int) (*throttle.Admission, error) {
	a, err := b.Backend.Admit(ctx, cost)
	if err != nil && errors.Is(err, throttle.ErrBackend) {
		err = fmt.Errorf("%s: %w", b.name, err)
	}
	return a, err
}

// outageWriter says on w when Redis stops answering (pace admits nothing
// meanwhile) and when it answers again.
type outageWriter struct {
	w       io.Writer
	url     string // redacted
	timeout time.Duration

	mu sync.Mutex
}

func (o *outageWriter) report(e redisrate.Outage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case e.Down && e.Err != nil:
		fmt.Fprintf(o.w, "pace: redis %s is not answering (%s); starting no job until it does, for up to %s\n",
			o.url, redisrate.RedactURL(e.Err.Error()), o.timeout)
	case e.Down:
		fmt.Fprintf(o.w, "pace: redis %s is not answering (no reply for %s); starting no job until it does, for up to %s\n",
			o.url, roundDuration(time.Since(e.Since)), o.timeout)
	default:
		fmt.Fprintf(o.w, "pace: redis %s is answering again after %s; going on\n", o.url, roundDuration(time.Since(e.Since)))
	}
}

// quietRedisLogger discards go-redis's own log lines.
type quietRedisLogger struct{}

func (quietRedisLogger) Printf(context.Context, string, ...any) {}
