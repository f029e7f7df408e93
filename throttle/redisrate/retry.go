package redisrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/internal/gate"
)

// stallAfter is how long a call to Redis may go unanswered before the
// limiter reports Redis as not answering. go-redis retries failed dials
// and commands by itself, so a call to a Redis that is down can take
// seconds to fail, or succeed in the end once Redis is back.
const stallAfter = time.Second

// transient lists the Redis error codes that a retry may cure: a server
// loading its data, busy with a script, out of memory or unable to save
// (writes refused for now), a read-only replica during a failover, or a
// cluster resharding or failing over.
var transient = [...]string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN",
	"READONLY", "NOREPLICAS", "MOVED", "ASK", "NOSCRIPT", "OOM", "MISCONF"}

// permanent reports whether err is an answer that retrying cannot change:
// an error reply from Redis other than the transient ones (such as
// WRONGPASS, NOAUTH or WRONGTYPE), or a closed client. Redis error replies
// are text whose first word is the code, so the code is all there is to go
// by.
func permanent(err error) bool {
	if errors.Is(err, redis.ErrClosed) {
		return true
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	for _, code := range transient {
		if redis.HasErrorPrefix(err, code) {
			return false
		}
	}
	return true
}

// passwordHint says what to do when err is Redis refusing a client that
// has not authenticated, else "". Redis answers NOAUTH to a short
// command, but to one of more than 10 arguments (the admission script's)
// "ERR Protocol error: unauthenticated multibulk length", which does not
// say that a password is missing.
func passwordHint(err error) string {
	if redis.HasErrorPrefix(err, "NOAUTH") || strings.Contains(err.Error(), "Protocol error: unauthenticated") {
		return `Redis wants a password and the URL gives none (write ":PASSWORD@" before its host): `
	}
	return ""
}

// redirected reports whether err is a node of a Redis Cluster sending c
// to another node (MOVED or ASK) while c is not a cluster client, which
// would follow it: the URL names one node of a cluster without
// cluster=true, and no retry reaches a quota kept on another node. (A
// cluster client gives up after a few redirections while the cluster
// reshards: that is transient.)
func redirected(c Client, err error) bool {
	if _, ok := c.(*redis.ClusterClient); ok {
		return false
	}
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK")
}

// garbled reports whether err is go-redis failing to parse what the
// server sent: the server does not speak the Redis protocol (a web
// server, another service on the port). go-redis's parse errors are
// plain text, so their words are all there is to go by
// (TestLiveNotRedis pins them).
func garbled(err error) bool {
	s := err.Error()
	return strings.Contains(s, "redis: invalid reply") || strings.Contains(s, "redis: can't parse")
}

// hint says what to do about err, from a call through c, when it failed
// for a reason the user can fix in the URL, else "": a cluster named by
// one node, a server that is not Redis (garbled), or a password missing
// (passwordHint).
func hint(c Client, err error) string {
	if redirected(c, err) {
		return "Redis is a cluster and the URL names one of its nodes (add ?cluster=true to the URL): "
	}
	if garbled(err) {
		return "the server does not speak the Redis protocol (a wrong port?): "
	}
	return passwordHint(err)
}

// answered reports whether err, from a call to Redis, still means that
// Redis answered: no error, or an error reply.
func answered(err error) bool {
	var re redis.Error
	return err == nil || errors.As(err, &re)
}

// refusal reports whether err is an error reply that a retry may cure
// (see transient): Redis answers, but admits nothing for now.
func refusal(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !permanent(err)
}

// run calls script s until Redis answers; see retry. It returns as soon
// as ctx is cancelled; left, if set, gets the reply of the try then left
// behind (see await).
func (l *Limiter) run(ctx context.Context, s *redis.Script, keys []string, args []any, left func(any, error)) (any, error) {
	var reply any
	err := l.retry(ctx, func(ctx context.Context) error {
		var err error
		reply, err = l.eval(ctx, s, keys, args, left)
		return err
	})
	return reply, err
}

// retry makes call until it succeeds, retrying failures with capped
// exponential backoff. It gives up with an error wrapping
// throttle.ErrBackend once the timeout has passed since the first failed
// call without an answer, or at once for an answer that retrying cannot
// change. Each call is bounded by the timeout even if the client has none.
func (l *Limiter) retry(ctx context.Context, call func(context.Context) error) error {
	var failingSince time.Time
	var cause error // the latest failure that said more than a timeout
	backoff := minBackoff
	for {
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, l.cf.Timeout)
		err := l.health.watch(cctx, func() error { return call(cctx) })
		cancel()
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		l.failures.Add(1)
		if permanent(err) || redirected(l.client, err) || l.health.notRedis(err) {
			return fmt.Errorf("redisrate: quota %q: %s%w: %w", l.name, hint(l.client, err), throttle.ErrBackend, err)
		}
		if failingSince.IsZero() {
			failingSince = start
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			cause = err
		}
		left := l.cf.Timeout - time.Since(failingSince)
		if left <= 0 {
			if refusal(err) {
				// Redis answered every try, with an error.
				return fmt.Errorf("redisrate: quota %q: refused for %s: %w: %w",
					l.name, l.cf.Timeout, throttle.ErrBackend, err)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				// The last try timed out: that is what "no answer" says,
				// with what an earlier try learnt, if anything.
				if cause != nil {
					return fmt.Errorf("redisrate: quota %q: no answer for %s: %w: %w",
						l.name, l.cf.Timeout, throttle.ErrBackend, cause)
				}
				return fmt.Errorf("redisrate: quota %q: no answer for %s: %w",
					l.name, l.cf.Timeout, throttle.ErrBackend)
			}
			return fmt.Errorf("redisrate: quota %q: no answer for %s: %w: %w",
				l.name, l.cf.Timeout, throttle.ErrBackend, err)
		}
		// Sleep between half and all of backoff, but try once more at the
		// deadline rather than sleep past it.
		d := backoff/2 + time.Duration(mrand.Int64N(int64(backoff/2)+1))
		if err := gate.Sleep(ctx, l.core.Closed(), min(d, left)); err != nil {
			return err
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// eval runs s once (see evalNow), and returns as soon as ctx is
// cancelled; left, if set, gets the reply of the call then left behind
// (see await).
func (l *Limiter) eval(ctx context.Context, s *redis.Script, keys []string, args []any, left func(any, error)) (any, error) {
	return await(ctx, &l.calls, func() (any, error) { return l.evalNow(ctx, s, keys, args) }, left)
}

// evalNow runs s once, on the caller's goroutine: EVALSHA, then EVAL if
// Redis does not have the script.
func (l *Limiter) evalNow(ctx context.Context, s *redis.Script, keys []string, args []any) (any, error) {
	c := countingScripter{l}
	reply, err := s.Run(ctx, c, keys, args...).Result()
	// Run falls back on EVAL only for errors that start with NOSCRIPT;
	// some servers and proxies word it otherwise ("ERR NOSCRIPT ...").
	if err != nil && !redis.HasErrorPrefix(err, "NOSCRIPT") && strings.Contains(err.Error(), "NOSCRIPT") {
		reply, err = s.Eval(ctx, c, keys, args...).Result()
	}
	return reply, err
}

// countingScripter is the limiter's client, counting script calls: every
// EVALSHA and EVAL is a round trip, and an EVAL a script load.
type countingScripter struct{ l *Limiter }

func (c countingScripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	c.l.roundTrips.Add(1)
	c.l.scriptLoads.Add(1)
	return c.l.client.Eval(ctx, script, keys, args...)
}

func (c countingScripter) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	c.l.roundTrips.Add(1)
	return c.l.client.EvalSha(ctx, sha1, keys, args...)
}

func (c countingScripter) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return c.Eval(ctx, script, keys, args...)
}

func (c countingScripter) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	return c.EvalSha(ctx, sha1, keys, args...)
}

func (c countingScripter) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return c.l.client.ScriptExists(ctx, hashes...)
}

func (c countingScripter) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return c.l.client.ScriptLoad(ctx, script)
}

// health follows whether Redis answers, and reports when that changes:
// once when Redis stops answering, or answers only with errors a retry
// may cure (nothing is admitted meanwhile), once when it answers again.
// It is safe for concurrent use.
type health struct {
	timeout time.Duration

	// final reports the error replies that end a call at once (see
	// retry): no outage.
	final func(error) bool

	mu      sync.Mutex
	report  func(Outage) // nil: say nothing
	down    bool         // reported that Redis is not answering, or refusing
	refused bool         // down began with a refusal (see refusal)
	since   time.Time    // when the first unanswered call began
	lastOK  time.Time    // when the latest answer came
}

// watch makes call, a call to Redis with ctx, and records how it went: an
// answer, a failure, or no answer yet after stallAfter.
func (h *health) watch(ctx context.Context, call func() error) error {
	start := time.Now()
	stall := time.AfterFunc(min(stallAfter, h.timeout/2), func() { h.stalled(start) })
	err := call()
	stall.Stop()
	if errors.Is(ctx.Err(), context.Canceled) {
		return err // the caller gave up on the call: it says nothing about Redis
	}
	if h.notRedis(err) {
		return err // not Redis at all: no outage (see retry)
	}
	if h.closesEarly(err) {
		err = fmt.Errorf("%w: the server closes the connection before answering (a TLS port wants rediss://)", err)
	}
	h.observe(start, err)
	return err
}

// closesEarly reports whether err, from a call to a server that has never
// answered, is the connection closed or reset by the server (a Redis that
// takes only TLS, given redis://; a service that is not Redis; a proxy
// whose Redis is down). A retry may cure the last, so it is retried; the
// words point at the others.
func (h *health) closesEarly(err error) bool {
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastOK.IsZero()
}

// notRedis reports whether err, from a call to a server that has never
// answered, says that it does not speak the Redis protocol (garbled): the
// URL names another service, which no wait cures. Once Redis has
// answered, such an error is taken as a connection gone bad, and
// retried.
func (h *health) notRedis(err error) bool {
	if err == nil || !garbled(err) {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastOK.IsZero()
}

// stalled records that a call begun at start is still unanswered.
func (h *health) stalled(start time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down || h.lastOK.After(start) { // answered since the call began
		return
	}
	h.down, h.since = true, start
	if h.report != nil {
		h.report(Outage{Down: true, Since: start})
	}
}

// observe records the outcome of a call begun at start that ended with
// err.
func (h *health) observe(start time.Time, err error) {
	refused := refusal(err) && (h.final == nil || !h.final(err))
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case (refused || !answered(err)) && !h.down:
		h.down, h.refused, h.since = true, refused, start
		if h.report != nil {
			h.report(Outage{Down: true, Since: start, Err: err, Refused: h.refused})
		}
	case answered(err) && !refused:
		h.lastOK = time.Now()
		if h.down {
			h.down = false
			if h.report != nil {
				h.report(Outage{Since: h.since, Refused: h.refused})
			}
		}
	}
}

// isDown reports whether Redis is reported not answering now.
func (h *health) isDown() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down
}

// setReport changes where outages are reported; nil silences them.
func (h *health) setReport(f func(Outage)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.report = f
}
