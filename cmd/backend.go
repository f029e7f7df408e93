package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/localstore"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// openBackend makes the limiter a run's options ask for: the in-memory
// limiter, the Redis-backed one with --redis, or the local store with
// --key alone (openLocal). It is the default of Factory.OpenBackend.
// Messages about the backend (Redis outages) go to w. A shared backend
// checks its rules against the ones stored before it returns, which may
// take up to --redis-timeout while Redis does not answer; ctx cuts that
// short.
func openBackend(ctx context.Context, o *CommonOptions, w io.Writer) (throttle.Backend, error) {
	if o.Redis.Local() {
		return openLocal(ctx, o, w)
	}
	if o.Redis.URL == "" {
		return throttle.New(throttle.Options{Rules: o.allRules(), Margin: o.Margin, Reorder: o.Reorder})
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
	var mismatch *throttle.MismatchError
	switch {
	case errors.As(err, &mismatch):
		return nil, &mismatchError{mismatch, fmt.Sprintf("redis quota %q at %s is kept with rules %q, this process has %q: "+
			"give every process sharing --key the same -r and --global-jobs, use another --key, "+
			"or wait until the quota has been unused for its longest window",
			mismatch.Key, url, mismatch.Stored, mismatch.Spec)}
	case err != nil:
		return nil, fmt.Errorf("redis %s: %w", url, err)
	}
	return namedBackend{Backend: b, name: "redis " + url}, nil
}

// openLocal opens the local store of --key in --state (or
// localstore.DefaultDir), named for messages "local quota NAME at PATH".
// A store kept with other rules is refused with a *throttle.MismatchError (exit 2);
// a damaged store, or one a newer pace wrote, with ErrBackend (exit 3),
// its file left as it is.
func openLocal(ctx context.Context, o *CommonOptions, w io.Writer) (throttle.Backend, error) {
	dir := o.Redis.State
	if dir == "" {
		var err error
		if dir, err = localstore.DefaultDir(); err != nil {
			return nil, err
		}
	}
	key := o.Redis.Key
	if o.Verbose {
		fmt.Fprintf(w, "pace: local quota %q in %s\n", key, dir)
	}
	st, err := localstore.Open(ctx, localstore.Options{
		Dir:        dir,
		Key:        key,
		Rules:      o.allRules(),
		Margin:     o.Margin,
		GlobalJobs: o.Redis.GlobalJobs,
	})
	var mismatch *throttle.MismatchError
	switch {
	case errors.As(err, &mismatch):
		return nil, &mismatchError{mismatch, fmt.Sprintf("local quota %q in %s is kept with rules %q, this process has %q: "+
			"give every process sharing --key the same -r and --global-jobs, use another --key, "+
			"wait until the quota has been unused for its longest window, or forget it with pace quota reset --key %s%s",
			mismatch.Key, dir, mismatch.Stored, mismatch.Spec, key, stateFlag(o.Redis))}
	case err != nil:
		// The store's errors name its file and say what to do.
		return nil, err
	}
	return namedBackend{Backend: st, name: fmt.Sprintf("local quota %s at %s", key, st.Path())}, nil
}

// mismatchError is a *throttle.MismatchError told to pace's user: what
// to agree on, in flags.
type mismatchError struct {
	err *throttle.MismatchError
	msg string
}

func (e *mismatchError) Error() string { return e.msg }
func (e *mismatchError) Unwrap() error { return e.err }

// stateFlag returns " --state DIR" when o names a directory, for commands
// pace suggests.
func stateFlag(o RedisOptions) string {
	if o.State == "" {
		return ""
	}
	return " --state " + runner.Quote(o.State)
}

// namedBackend puts the backend's name (a redacted Redis URL, or the local
// quota's name and file) in front of its admission errors, so that a
// failure in the middle of a run says where, as one at the start does.
type namedBackend struct {
	throttle.Backend
	name string
}

func (b namedBackend) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
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
