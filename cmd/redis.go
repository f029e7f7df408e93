package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/throttle"
)

// This file wires the Redis-backed limiter (throttle.RedisLimiter) into
// the commands: the --redis, --key, --global-jobs and --redis-timeout
// flags, the limiter's construction, the check of the rules against the
// ones stored in Redis before anything runs, and the messages about Redis
// outages. Passwords in the URL never reach any of those messages.

// redisURLEnv names the environment variable that supplies --redis.
const redisURLEnv = "PACE_REDIS_URL"

// defaultRedisKey is --key's default: the quota every pace process shares
// unless told otherwise.
const defaultRedisKey = "default"

// Backoff of the checks made before the run while Redis does not answer.
const (
	redisCheckMinBackoff = 50 * time.Millisecond
	redisCheckMaxBackoff = 2 * time.Second
)

// RedisOptions are the flags that make the limiter shared through Redis by
// every pace process naming the same Redis and key. The zero value means
// no Redis; check fills in the defaults.
type RedisOptions struct {
	// URL is --redis, or $PACE_REDIS_URL when the flag is not given;
	// empty means the in-memory limiter of one process.
	URL string
	// Key names the shared quota (--key); empty means defaultRedisKey.
	Key string
	// GlobalJobs caps the jobs in flight across every process sharing the
	// key (--global-jobs); 0 means no cap.
	GlobalJobs int
	// Timeout is how long pace keeps retrying a Redis that does not
	// answer before it gives up with exit status 3 (--redis-timeout); 0
	// means throttle.DefaultRedisTimeout.
	Timeout time.Duration

	urlSet bool // --redis was given, possibly empty
}

// redisHelp is the Redis part of pace run's and pace fetch's --help.
const redisHelp = `Sharing rules across processes:
  --redis URL (or $PACE_REDIS_URL; redis://, rediss:// for TLS, unix://)
  makes every pace process naming the same Redis and --key keep one set
  of rules together, admitted by one atomic script on Redis's clock.
  Processes giving a key different rules are refused (exit 2) before
  anything runs. --global-jobs N caps jobs in flight across the fleet
  with leases that come back if a process dies. If Redis stops
  answering, nothing new starts; pace retries and goes on when Redis is
  back, or lets running jobs finish and exits 3 after --redis-timeout.
  Passwords are never printed. See docs/redis.md.`

// addRedisFlags binds the Redis flags of cmd to o.
func addRedisFlags(cmd *cobra.Command, o *RedisOptions) {
	fl := cmd.Flags()
	// The default is never shown: $PACE_REDIS_URL may hold a password.
	fl.Var(redisURLValue{o}, "redis",
		"share the rules with every pace process using the same Redis `URL` and --key:\n"+
			"redis://[user:password@]host[:port][/db], rediss:// for TLS, unix:///path/to/socket\n"+
			"(default $"+redisURLEnv+"; --redis= ignores it)")
	fl.StringVar(&o.Key, "key", "",
		"with --redis: the `NAME` of the shared quota; processes with the same Redis and key share the rules")
	fl.IntVar(&o.GlobalJobs, "global-jobs", 0,
		"with --redis: run at most `N` jobs at once across every process sharing the key (0: no cap)")
	fl.DurationVar(&o.Timeout, "redis-timeout", 0,
		"with --redis: when Redis has not answered for `DURATION`, start nothing more,\nlet running jobs finish and exit 3")
	// The defaults are filled in by check, so that it can tell whether a
	// flag was given; help shows them all the same.
	fl.Lookup("key").DefValue = defaultRedisKey
	fl.Lookup("redis-timeout").DefValue = throttle.DefaultRedisTimeout.String()
	for _, name := range []string{"redis", "key", "global-jobs", "redis-timeout"} {
		cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
}

// redisURLValue is the pflag.Value of --redis. It remembers that the flag
// was given, so that --redis= can turn $PACE_REDIS_URL off, and shows the
// URL only with its password redacted.
type redisURLValue struct{ o *RedisOptions }

func (v redisURLValue) String() string {
	if v.o == nil {
		return ""
	}
	return throttle.RedactURL(v.o.URL)
}

func (v redisURLValue) Set(s string) error {
	v.o.URL, v.o.urlSet = s, true
	return nil
}

func (redisURLValue) Type() string { return "URL" }

// check validates the Redis flags and fills in their defaults, taking the
// URL from $PACE_REDIS_URL when --redis was not given. hasRules says
// whether -r gave any rule.
func (o *RedisOptions) check(hasRules bool) error {
	if !o.urlSet {
		o.URL = os.Getenv(redisURLEnv)
	}
	if o.URL == "" {
		switch {
		case o.GlobalJobs != 0:
			return flagErrorf("--global-jobs needs --redis (or $%s); -j caps the jobs of one process", redisURLEnv)
		case o.Key != "":
			return flagErrorf("--key needs --redis (or $%s)", redisURLEnv)
		case o.Timeout != 0:
			return flagErrorf("--redis-timeout needs --redis (or $%s)", redisURLEnv)
		}
		return nil
	}
	from := `"--redis"`
	if !o.urlSet {
		from = "$" + redisURLEnv
	}
	switch {
	case strings.ContainsAny(o.Key, "{}"):
		return flagErrorf("invalid argument %q for \"--key\": want a name without '{' or '}'", o.Key)
	case o.GlobalJobs < 0:
		return flagErrorf("invalid argument %d for \"--global-jobs\": want at least 1, or 0 for no cap", o.GlobalJobs)
	case o.Timeout < 0:
		return flagErrorf("invalid argument %v for \"--redis-timeout\": want more than 0", o.Timeout)
	case !hasRules && o.GlobalJobs == 0:
		return flagErrorf("%s shares rate rules and --global-jobs with other processes: give -r, --global-jobs or both", from)
	}
	if _, err := throttle.ParseRedisURL(o.URL); err != nil {
		return flagErrorf("invalid %s: %v", from, err) // the error shows the URL redacted
	}
	o.Key = cmp.Or(o.Key, defaultRedisKey)
	o.Timeout = cmp.Or(o.Timeout, throttle.DefaultRedisTimeout)
	return nil
}

// redisLimiter is the limiter of a run with --redis: a
// throttle.RedisLimiter on a client of its own, which Close closes. It
// adds what pace needs around it: a check of the stored rules before the
// run (start), messages when Redis stops and starts answering, and errors
// with the URL's password redacted. It is safe for concurrent use.
type redisLimiter struct {
	*throttle.RedisLimiter
	client  redis.UniversalClient
	health  *redisHealth
	key     string
	spec    string // the rule spec this process stores with the quota
	timeout time.Duration
	clock   throttle.Clock
	verbose bool

	closeOnce sync.Once
}

// newRedisLimiter returns the limiter for --redis, a *redisLimiter. It
// does not contact Redis; start does. Errors are usage errors (exit 2).
func newRedisLimiter(o *RedisOptions, rules []throttle.Rule, margin time.Duration, verbose bool, clock throttle.Clock) (Limiter, error) {
	uopts, err := throttle.ParseRedisURL(o.URL)
	if err != nil {
		return nil, err
	}
	// go-redis logs some failures on stderr by itself, outside pace's
	// control of what is printed; pace reports Redis failures itself
	// (redisHealth). The logger is go-redis's process-wide setting.
	redis.SetLogger(quietRedisLogger{})
	client := redis.NewUniversalClient(uopts)
	h := &redisHealth{
		clock:   clock,
		url:     throttle.RedactURL(o.URL),
		timeout: o.Timeout,
		redact:  newRedactor(o.URL, uopts.Password),
		verbose: verbose,
	}
	lim, err := throttle.NewRedis(watchedClient{client, h}, o.Key, rules,
		throttle.WithRedisClock(clock),
		throttle.WithRedisMargin(margin),
		throttle.WithRedisTimeout(o.Timeout),
		throttle.WithGlobalJobs(o.GlobalJobs))
	if err != nil {
		client.Close()
		return nil, err
	}
	return &redisLimiter{
		RedisLimiter: lim,
		client:       client,
		health:       h,
		key:          o.Key,
		spec:         lim.Spec(),
		timeout:      o.Timeout,
		clock:        clock,
		verbose:      verbose,
	}, nil
}

// start makes l report Redis outages on w, then checks, before any job
// runs, that the quota is not kept in Redis with other rules. While Redis
// does not answer it retries with backoff, for up to the Redis timeout.
// The error wraps throttle.ErrRuleMismatch (exit 2) or throttle.ErrBackend
// (exit 3).
func (l *redisLimiter) start(ctx context.Context, w io.Writer) error {
	l.health.setOutput(w)
	if l.verbose {
		l.health.printf("pace: redis: quota %q at %s, rules %q\n", l.key, l.health.url, l.spec)
	}
	key := l.Keys()[0] // the rules key
	backoff := redisCheckMinBackoff
	var failingSince time.Time
	for {
		began := l.clock.Now()
		var stored string
		var err error
		cctx, cancel := context.WithTimeout(ctx, l.timeout)
		l.health.watch(cctx, func() error {
			stored, err = l.client.Get(cctx, key).Result()
			if errors.Is(err, redis.Nil) {
				err = nil // nobody keeps the quota now: the first admission claims it
			}
			return err
		})
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case err == nil && stored != "" && stored != l.spec:
			return fmt.Errorf("redis quota %q at %s is kept with rules %q, this process has %q "+
				"(give every process sharing --key the same -r and --global-jobs, use another --key, "+
				"or wait until the quota has been unused for its longest window): %w",
				l.key, l.health.url, stored, l.spec, throttle.ErrRuleMismatch)
		case err == nil:
			return nil
		case redisRefusal(err):
			return l.health.redactErr(fmt.Errorf("redis %s: %w: %w", l.health.url, throttle.ErrBackend, err))
		}
		if failingSince.IsZero() {
			failingSince = began
		}
		left := l.timeout - l.clock.Now().Sub(failingSince)
		if left <= 0 {
			return l.health.redactErr(fmt.Errorf("redis %s: no answer for %s: %w: %w",
				l.health.url, l.timeout, throttle.ErrBackend, err))
		}
		t := l.clock.NewTimer(min(backoff, left))
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		backoff = min(2*backoff, redisCheckMaxBackoff)
	}
}

// Acquire takes a fleet-wide slot if --global-jobs asks for one, then
// waits for the rates; see throttle.RedisLimiter.Acquire. Its errors name
// the Redis, and show no password.
func (l *redisLimiter) Acquire(ctx context.Context) (func(), error) {
	_, release, err := l.Admit(ctx)
	return release, err
}

// Admit is Acquire that also returns the admission instant by Redis's clock.
func (l *redisLimiter) Admit(ctx context.Context) (time.Time, func(), error) {
	at, release, err := l.RedisLimiter.Admit(ctx)
	if err != nil {
		if ctx.Err() == nil {
			err = fmt.Errorf("redis %s: %w", l.health.url, err)
		}
		return time.Time{}, nil, l.health.redactErr(err)
	}
	return at, release, nil
}

// Close gives back any fleet-wide slot still held, stops the outage
// messages, logs the Redis traffic with --verbose, and closes the client.
// It may be called more than once.
func (l *redisLimiter) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.RedisLimiter.Close()
		if l.verbose {
			rs, st := l.RedisStats(), l.Stats()
			per := "-"
			if st.Admitted > 0 {
				per = strconv.FormatFloat(float64(rs.RoundTrips)/float64(st.Admitted), 'f', 2, 64)
			}
			l.health.printf("pace: redis: %d admissions, %d round trips (%s per admission), %d failed, %d leases lost\n",
				st.Admitted, rs.RoundTrips, per, rs.Failures, rs.LeasesLost)
		}
		l.health.setOutput(nil)
		err = l.client.Close()
	})
	return err
}

// redisRefusal reports whether err is an answer from Redis that retrying
// will not change, such as a wrong password (WRONGPASS, NOAUTH) or a key
// of the wrong type, rather than a failure to get an answer. Redis error
// replies are text whose first word is the code.
func redisRefusal(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	for _, code := range []string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "MOVED", "ASK"} {
		if redis.HasErrorPrefix(err, code) {
			return false
		}
	}
	return true
}

// redisAnswered reports whether err (from a call to Redis) still means
// that Redis answered: no error, or an error reply.
func redisAnswered(err error) bool {
	var re redis.Error
	return err == nil || errors.As(err, &re)
}

// redisStallAfter is how long a call to Redis may go unanswered before
// pace says Redis is not answering. go-redis retries failed dials and
// commands by itself, so a call to a Redis that is down can take seconds
// to fail, or succeed in the end once Redis is back.
const redisStallAfter = time.Second

// watchedClient is the client the limiter talks to Redis through: it
// tells health how every call goes.
type watchedClient struct {
	redis.UniversalClient
	health *redisHealth
}

// Eval runs a script, watched.
func (c watchedClient) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	var cmd *redis.Cmd
	c.health.watch(ctx, func() error {
		cmd = c.UniversalClient.Eval(ctx, script, keys, args...)
		return cmd.Err()
	})
	return cmd
}

// EvalSha runs a loaded script, watched.
func (c watchedClient) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	var cmd *redis.Cmd
	c.health.watch(ctx, func() error {
		cmd = c.UniversalClient.EvalSha(ctx, sha1, keys, args...)
		return cmd.Err()
	})
	return cmd
}

// redisHealth follows whether Redis answers, and says so on stderr when
// that changes: once when Redis stops answering (pace admits nothing
// meanwhile), once when it answers again. It is safe for concurrent use.
type redisHealth struct {
	clock   throttle.Clock
	url     string // redacted
	timeout time.Duration
	redact  func(string) string
	verbose bool

	mu     sync.Mutex
	out    io.Writer // nil: say nothing
	down   bool      // said that Redis is not answering
	since  time.Time // when the first unanswered call began
	lastOK time.Time // when the latest answer came
}

// watch runs call, a call to Redis with ctx, and records how it went: an
// answer, a failure, or no answer yet after redisStallAfter.
func (h *redisHealth) watch(ctx context.Context, call func() error) {
	start := h.clock.Now()
	stall := time.AfterFunc(min(redisStallAfter, h.timeout/2), func() { h.stalled(start) })
	err := call()
	stall.Stop()
	if errors.Is(ctx.Err(), context.Canceled) {
		return // pace gave up on the call: it says nothing about Redis
	}
	h.observe(start, err)
}

// stalled records that a call begun at start is still unanswered.
func (h *redisHealth) stalled(start time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.down || h.lastOK.After(start) { // answered since the call began
		return
	}
	h.down, h.since = true, start
	h.printLocked("pace: redis %s is not answering (no reply for %s); starting no job until it does, for up to %s\n",
		h.url, roundDuration(h.clock.Now().Sub(start)), h.timeout)
}

// observe records the outcome of a call begun at start that ended with
// err: Redis answered if err is nil or an error reply.
func (h *redisHealth) observe(start time.Time, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !redisAnswered(err) && !h.down:
		h.down, h.since = true, start
		h.printLocked("pace: redis %s is not answering (%v); starting no job until it does, for up to %s\n",
			h.url, err, h.timeout)
	case redisAnswered(err):
		now := h.clock.Now()
		h.lastOK = now
		if h.down {
			h.down = false
			h.printLocked("pace: redis %s is answering again after %s; going on\n",
				h.url, roundDuration(now.Sub(h.since)))
		}
	}
}

// setOutput makes h write its messages to w; nil silences it.
func (h *redisHealth) setOutput(w io.Writer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.out = w
}

// printf writes a message, with any password redacted.
func (h *redisHealth) printf(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.printLocked(format, args...)
}

// printLocked is printf; it requires h.mu held.
func (h *redisHealth) printLocked(format string, args ...any) {
	if h.out != nil {
		io.WriteString(h.out, h.redact(fmt.Sprintf(format, args...)))
	}
}

// redactErr returns err with any password in its message redacted; it
// still wraps err, so errors.Is sees ErrBackend and the like.
func (h *redisHealth) redactErr(err error) error {
	if err == nil {
		return nil
	}
	if msg := err.Error(); h.redact(msg) != msg {
		return &redactedError{msg: h.redact(msg), err: err}
	}
	return err
}

// redactedError is an error whose message has been redacted.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// newRedactor returns a function that hides the password of rawURL
// (password is its decoded form) in a message: the URL as written, its
// decoded password and the password's escaped forms.
func newRedactor(rawURL, password string) func(string) string {
	var pairs []string
	if red := throttle.RedactURL(rawURL); red != rawURL {
		pairs = append(pairs, rawURL, red)
	}
	if password != "" {
		for _, p := range []string{url.QueryEscape(password), url.PathEscape(password),
			url.UserPassword("", password).String()[1:], password} {
			if p != "" && !slices.Contains(pairs, p) {
				pairs = append(pairs, p, "xxxxx")
			}
		}
	}
	if len(pairs) == 0 {
		return func(s string) string { return s }
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace
}

// quietRedisLogger discards go-redis's own log lines.
type quietRedisLogger struct{}

func (quietRedisLogger) Printf(context.Context, string, ...any) {}

// startLimiter prepares lim for a run before any job starts: a Redis
// limiter reports Redis outages on w from then on, and checks its rules
// against those stored in Redis, which may take up to --redis-timeout
// while Redis does not answer; a signal from signals cuts that short
// (an *interruptedError). Other limiters need nothing.
func startLimiter(ctx context.Context, lim Limiter, w io.Writer, signals <-chan os.Signal) error {
	l, ok := lim.(*redisLimiter)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var interrupted error
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case sig := <-signals:
			interrupted = &interruptedError{sig}
			cancel()
		case <-stop:
		}
	}()
	err := l.start(ctx, w)
	close(stop)
	<-stopped
	if interrupted != nil {
		return interrupted // even if the check was done: nothing has run
	}
	return err
}

// interruptedError reports a signal that came before anything ran.
type interruptedError struct{ sig os.Signal }

func (e *interruptedError) Error() string {
	return signalName(e.sig) + ": stopped before anything ran"
}

// stopLimiter releases what lim holds once the run is over.
func stopLimiter(lim Limiter) {
	if c, ok := lim.(io.Closer); ok {
		c.Close()
	}
}

// limiterExitCode is the exit code for a limiter that failed with err: 2
// for rules that differ from those of the processes sharing the quota
// (throttle.ErrRuleMismatch), 3 when its backend failed
// (throttle.ErrBackend), 130 or 143 for a signal, else otherwise.
func limiterExitCode(err error, otherwise int) int {
	var ie *interruptedError
	switch {
	case errors.As(err, &ie) && ie.sig == syscall.SIGTERM:
		return ExitTerminated
	case errors.As(err, &ie):
		return ExitInterrupted
	case errors.Is(err, throttle.ErrRuleMismatch):
		return ExitUsage
	case errors.Is(err, throttle.ErrBackend):
		return ExitBackend
	}
	return otherwise
}
