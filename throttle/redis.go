package throttle

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrBackend is wrapped by the errors a RedisLimiter returns when Redis
// cannot decide: no successful answer within the Redis timeout, or an
// answer that retrying cannot fix (wrong password, wrong key type). The
// limiter never admits a call it could not record, so the caller should
// stop (pace exits with status 3).
var ErrBackend = errors.New("throttle: backend unavailable")

// ErrRuleMismatch is wrapped by the error a RedisLimiter returns when the
// quota in Redis is kept by other processes with another rule set.
var ErrRuleMismatch = errors.New("throttle: rule mismatch")

// ErrLimiterClosed is returned by the methods of a closed RedisLimiter.
var ErrLimiterClosed = errors.New("throttle: limiter closed")

// RedisClient is the part of a go-redis client that RedisLimiter uses.
// redis.UniversalClient satisfies it, and so *redis.Client,
// *redis.ClusterClient and *redis.Ring; tests can pass a fake.
type RedisClient interface {
	Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd
	EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd
}

// Defaults of the RedisLimiter options.
const (
	DefaultRedisTimeout = 30 * time.Second
	DefaultRedisJitter  = 10 * time.Millisecond
	DefaultRedisLease   = 15 * time.Second
)

// Retry pacing: backoff after a failed call, and how often a caller waiting
// for a fleet-wide slot asks again.
const (
	redisMinBackoff = 50 * time.Millisecond
	redisMaxBackoff = 2 * time.Second
	redisSlotPoll   = 100 * time.Millisecond
)

// RedisOption configures a RedisLimiter.
type RedisOption func(*redisConfig)

type redisConfig struct {
	clock        Clock
	margin       time.Duration
	globalJobs   int
	timeout      time.Duration
	jitter       time.Duration
	lease        time.Duration
	counterAbove int
	slotPoll     time.Duration
}

// WithRedisClock makes the limiter take its local time from c: the time it
// sleeps, the Redis timeout, backoff and lease renewal. Admission decisions
// use the Redis server's clock, so c's skew does not matter to them.
func WithRedisClock(c Clock) RedisOption { return func(cf *redisConfig) { cf.clock = c } }

// WithRedisMargin adds d to every rule's window, as WithMargin does for the
// in-memory Limiter. A negative d is treated as 0. Processes sharing a
// quota should use the same margin: each forgets calls older than its own
// window plus margin, so the fleet keeps the smallest margin among them.
func WithRedisMargin(d time.Duration) RedisOption {
	return func(cf *redisConfig) { cf.margin = max(d, 0) }
}

// WithGlobalJobs caps the calls in flight across every process sharing the
// quota at n: Acquire takes a leased fleet-wide slot before it waits for
// the rates. n <= 0 means no cap.
func WithGlobalJobs(n int) RedisOption { return func(cf *redisConfig) { cf.globalJobs = max(n, 0) } }

// WithRedisTimeout sets how long the limiter keeps retrying without a
// successful answer from Redis before it gives up with an error wrapping
// ErrBackend. The default is DefaultRedisTimeout; d <= 0 keeps it.
func WithRedisTimeout(d time.Duration) RedisOption {
	return func(cf *redisConfig) {
		if d > 0 {
			cf.timeout = d
		}
	}
}

// WithRedisJitter sets the most random delay added to a wait the script
// asked for (at most 5% of that wait), so that processes woken by the same
// expiry do not all ask at once. The default is DefaultRedisJitter; 0
// turns jitter off.
func WithRedisJitter(d time.Duration) RedisOption {
	return func(cf *redisConfig) { cf.jitter = max(d, 0) }
}

// WithRedisLease sets the lease of a fleet-wide slot (WithGlobalJobs): a
// holder renews it every d/3 while its call runs, and a slot whose holder
// died is free again at most d later. The default is DefaultRedisLease;
// d <= 0 keeps it.
func WithRedisLease(d time.Duration) RedisOption {
	return func(cf *redisConfig) {
		if d > 0 {
			cf.lease = d
		}
	}
}

// WithRedisCounterAbove keeps every rule with N > n in a bounded-memory
// sliding window counter instead of an exact log, as WithCounterAbove does
// for the in-memory Limiter. The default is CounterAbove.
func WithRedisCounterAbove(n int) RedisOption {
	return func(cf *redisConfig) { cf.counterAbove = max(n, 0) }
}

// RedisLimiter keeps several rate rules at once, and optionally a cap on
// calls in flight, for a fleet of processes that share a quota through
// Redis: the same model as Limiter, with the state kept in Redis.
//
// Each admission is one Lua script call (one round trip). The script reads
// the server's clock (TIME), checks every rule, and only if all of them
// allow the call records it in all of them at that one instant; otherwise
// it records nothing and tells the caller how long to wait, which the
// caller sleeps (plus a small random jitter) before asking again. Clients'
// clocks therefore need not agree. A rule N/W is kept exactly (no window
// (t-W, t] of server time holds more than N admissions fleet-wide) in a
// sorted set, or, for N > CounterAbove, in a bounded counter that may
// refuse a call up to W/1024 early but never admits one too many.
//
// All keys of a quota NAME share the hash tag {NAME}, so a Redis Cluster
// keeps them on one node:
//
//	pace:{NAME}:rules           the rule set (FormatRules, rules sorted by window)
//	pace:{NAME}:r<i>:<N>/<W>    the state of rule i
//	pace:{NAME}:slots           the leases of the in-flight cap
//
// The script takes time from the server (TIME, allowed in scripts under
// effects replication: the default since Redis 5, the only mode since 7).
// A server or proxy that refuses TIME in scripts makes the script use the
// calling process's clock, sent with every call, instead; the fleet's
// clocks must then be kept in sync (NTP), or the rules hold only up to the
// clocks' skew. RedisStats().ClientTime counts such decisions.
//
// A process whose rules differ from the ones stored gets ErrRuleMismatch.
// Every key expires once its window has passed unused, so a new rule set
// may take the name over after the longest window has passed idle.
//
// Fairness: within one process admission is FIFO, one caller at a time
// talking to Redis. Across processes there is no queue: whoever asks first
// once a slot frees wins, so a process is not guaranteed a share, only the
// fleet as a whole is kept within the rules. The jitter spreads the
// retries of processes woken by the same expiry.
//
// When Redis does not answer the limiter admits nothing: it retries with
// capped exponential backoff and resumes when Redis is back, and gives up
// with an error wrapping ErrBackend once the Redis timeout has passed
// without a successful answer. A Redis that loses its data (restarted
// without persistence, failed over to a lagging replica) forgets the
// admissions of the last window and may then admit a burst above the
// rules; run it with persistence if that matters.
//
// Most callers want Acquire. A RedisLimiter must be made with NewRedis. It
// is safe for concurrent use. Close stops the lease renewals; the client
// stays the caller's to close.
type RedisLimiter struct {
	client  RedisClient
	name    string
	clock   Clock
	rules   []Rule // in the order given
	order   []int  // order[j] = index in rules of the j-th rule in Redis (sorted)
	spec    string // canonical rule spec stored with the quota
	keys    []string
	slotKey string
	args    []any // admission script arguments; copied per call
	cf      redisConfig

	idPrefix string
	seq      atomic.Uint64

	admitTurn redisQueue // one caller at a time talks to Redis for the rates
	slotTurn  redisQueue // one caller at a time waits for a fleet-wide slot

	closed    chan struct{}
	closeOnce sync.Once
	renewers  sync.WaitGroup

	roundTrips  atomic.Int64
	scriptLoads atomic.Int64
	failures    atomic.Int64
	leasesLost  atomic.Int64
	clientTime  atomic.Int64

	mu        sync.Mutex
	isClosed  bool
	stats     stats
	used      []int // per rule in given order: calls in the window at the last reply
	sleeps    int64 // times the head of the admission queue slept
	pause     time.Time
	reason    string
	leases    map[*redisLease]struct{}
	inFlight  int
	peak      int
	slotWaits int64
	slotWait  time.Duration
}

// NewRedis returns a limiter that keeps rules for every process sharing
// the quota key through client. key names the quota: it must be non-empty
// and hold no '{' or '}' (it becomes the Redis Cluster hash tag). NewRedis
// does not contact Redis; the first admission does. An empty rule set
// limits only the calls in flight (WithGlobalJobs).
func NewRedis(client RedisClient, key string, rules []Rule, opts ...RedisOption) (*RedisLimiter, error) {
	cf := redisConfig{
		clock:        SystemClock(),
		timeout:      DefaultRedisTimeout,
		jitter:       DefaultRedisJitter,
		lease:        DefaultRedisLease,
		counterAbove: CounterAbove,
		slotPoll:     redisSlotPoll,
	}
	for _, o := range opts {
		o(&cf)
	}
	if cf.clock == nil {
		cf.clock = SystemClock()
	}
	if client == nil {
		return nil, errors.New("throttle: NewRedis: nil client")
	}
	if key == "" || strings.ContainsAny(key, "{}") {
		return nil, fmt.Errorf("throttle: redis key %q: want a non-empty name without '{' or '}'", key)
	}
	if err := validate(rules); err != nil {
		return nil, err
	}
	l := &RedisLimiter{
		client:   client,
		name:     key,
		clock:    cf.clock,
		rules:    append([]Rule(nil), rules...),
		cf:       cf,
		idPrefix: rand.Text()[:16],
		closed:   make(chan struct{}),
		used:     make([]int, len(rules)),
		leases:   make(map[*redisLease]struct{}),
		slotKey:  "pace:{" + key + "}:slots",
	}
	l.stats.rules = make([]ruleStat, len(rules))
	l.stats.lastWhy = bindNone

	// Rules are stored sorted, so that processes listing the same rules in
	// another order share the quota.
	l.order = make([]int, len(rules))
	for i := range l.order {
		l.order[i] = i
	}
	slices.SortStableFunc(l.order, func(a, b int) int {
		ra, rb := rules[a], rules[b]
		return cmp.Or(cmp.Compare(ra.Window, rb.Window), cmp.Compare(ra.N, rb.N))
	})
	sorted := make([]Rule, len(rules))
	for j, i := range l.order {
		sorted[j] = rules[i]
	}
	// What every process must agree on goes in the spec: the rules, the
	// form each is kept in, and the in-flight cap.
	spec := []string{FormatRules(sorted)}
	if cf.counterAbove != CounterAbove && slices.ContainsFunc(sorted, func(r Rule) bool {
		return (r.N > cf.counterAbove) != (r.N > CounterAbove)
	}) {
		spec = append(spec, "counter-above="+strconv.Itoa(cf.counterAbove))
	}
	if cf.globalJobs > 0 {
		spec = append(spec, "global-jobs="+strconv.Itoa(cf.globalJobs))
	}
	l.spec = strings.TrimSpace(strings.Join(spec, " "))

	l.keys = make([]string, 0, len(sorted)+1)
	l.keys = append(l.keys, "pace:{"+key+"}:rules")
	l.args = make([]any, 0, 4+3*len(sorted))
	l.args = append(l.args, l.spec, "", "", "")
	var longest int64
	for j, r := range sorted {
		// Redis keeps microseconds: round the window up, never down.
		w := int64((r.Window + cf.margin + time.Microsecond - 1) / time.Microsecond)
		mode, name := "0", strconv.Itoa(r.N)+"/"+formatWindow(r.Window)
		if r.N > cf.counterAbove {
			mode, name = "1", name+":counter"
			longest = max(longest, w+(w+1023)/1024)
		} else {
			longest = max(longest, w)
		}
		l.keys = append(l.keys, "pace:{"+key+"}:r"+strconv.Itoa(j)+":"+name)
		l.args = append(l.args, r.N, w, mode)
	}
	l.args[3] = longest/1000 + 2 // rules key TTL, ms
	return l, nil
}

// Spec returns the rule spec this limiter stores with its quota and
// compares at every admission: its rules sorted by window, plus whatever
// else every process sharing the quota must agree on (the fleet-wide cap).
// A process can read the stored spec to refuse a mismatch up front.
func (l *RedisLimiter) Spec() string { return l.spec }

// Rules returns the limiter's rules, in the order given to NewRedis.
func (l *RedisLimiter) Rules() []Rule { return append([]Rule(nil), l.rules...) }

// Keys returns the Redis keys of the quota: the rules key, then one key per
// rule (in Redis order, sorted by window), then the slots key.
func (l *RedisLimiter) Keys() []string { return append(append([]string(nil), l.keys...), l.slotKey) }

// Wait blocks until every rule admits one more call fleet-wide and records
// it, or until ctx is done, Redis fails for longer than the Redis timeout
// (an error wrapping ErrBackend) or the stored rules differ (an error
// wrapping ErrRuleMismatch). It does not take a fleet-wide slot.
//
// If ctx ends while a script call is under way, Redis may still have
// recorded the admission: it then counts against the quota although the
// caller does not go ahead. The error is only ever on that safe side.
func (l *RedisLimiter) Wait(ctx context.Context) error {
	_, err := l.wait(ctx)
	return err
}

// wait is Wait returning the server time of the admission.
func (l *RedisLimiter) wait(ctx context.Context) (time.Time, error) {
	if err := l.usable(ctx); err != nil {
		return time.Time{}, err
	}
	if len(l.rules) == 0 {
		l.mu.Lock()
		l.stats.admit(0)
		l.mu.Unlock()
		return time.Time{}, nil
	}
	arrived := l.clock.Now()
	l.mu.Lock()
	sleeps := l.sleeps
	l.mu.Unlock()
	if err := l.admitTurn.lock(ctx, l.closed); err != nil {
		return time.Time{}, err
	}
	defer l.admitTurn.unlock()

	args := make([]any, len(l.args))
	copy(args, l.args)
	args[1] = l.newID()
	for {
		if err := l.sleepPause(ctx); err != nil {
			return time.Time{}, err
		}
		args[2] = l.clock.Now().UnixMicro()
		reply, err := l.run(ctx, redisAdmit, l.keys, args)
		if err != nil {
			return time.Time{}, err
		}
		r, err := parseAdmitReply(reply, len(l.rules))
		if err != nil {
			return time.Time{}, fmt.Errorf("throttle: redis quota %q: %w: %w", l.name, ErrBackend, err)
		}
		if r.mismatch {
			return time.Time{}, fmt.Errorf("throttle: redis quota %q is kept with rules %q, this process has %q "+
				"(use the same rules everywhere, another quota name, or wait for the quota's longest window to pass unused): %w",
				l.name, r.stored, l.spec, ErrRuleMismatch)
		}
		if !r.clock {
			l.clientTime.Add(1)
		}
		l.mu.Lock()
		for j, i := range l.order {
			l.used[i] = r.used[j]
		}
		if r.admitted {
			var waited int64
			if l.sleeps != sleeps {
				waited = int64(max(l.clock.Now().Sub(arrived), 1))
			}
			for i := range l.stats.rules {
				l.stats.rules[i].observe(l.used[i])
			}
			l.stats.admit(waited)
			l.mu.Unlock()
			return time.UnixMicro(r.now), nil
		}
		l.sleeps++
		l.stats.blockedOn(l.order[r.rule])
		l.mu.Unlock()
		if err := l.sleep(ctx, r.wait+l.jitter(r.wait)); err != nil {
			return time.Time{}, err
		}
	}
}

// usable returns why a new admission cannot start, if it cannot.
func (l *RedisLimiter) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-l.closed:
		return ErrLimiterClosed
	default:
		return nil
	}
}

// sleepPause sleeps out a pause set by PauseUntil. Requires the admission
// turn held.
func (l *RedisLimiter) sleepPause(ctx context.Context) error {
	for {
		l.mu.Lock()
		d := l.pause.Sub(l.clock.Now())
		if d <= 0 {
			l.mu.Unlock()
			return nil
		}
		l.sleeps++
		l.stats.blockedOn(bindPause)
		l.mu.Unlock()
		if err := l.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// PauseUntil makes this process admit nothing before t, whatever Redis
// says: a server that answered 429 with Retry-After has the last word. The
// pause is local; other processes sharing the quota are not told. reason
// says why, for diagnostics. A pause never shortens one already in force.
func (l *RedisLimiter) PauseUntil(t time.Time, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !t.After(l.pause) || !t.After(l.clock.Now()) {
		return
	}
	l.pause, l.reason = t, reason
	l.stats.pauses++
}

// Acquire takes a fleet-wide slot (when WithGlobalJobs set a cap, waiting
// FIFO within this process for one), then waits for the rates. It returns
// the function that gives the slot back; call it once the call has
// finished. Calling it more than once has no further effect. If Acquire
// fails it holds nothing: a slot taken before the rate wait failed is
// given back.
func (l *RedisLimiter) Acquire(ctx context.Context) (release func(), err error) {
	_, release, err = l.Admit(ctx)
	return release, err
}

// Admit is Acquire that also returns the admission instant by the Redis
// server's clock (by this process's clock under the fallback for servers
// that refuse TIME in scripts; zero with no rules).
func (l *RedisLimiter) Admit(ctx context.Context) (admitted time.Time, release func(), err error) {
	var lease *redisLease
	if l.cf.globalJobs > 0 {
		if lease, err = l.takeSlot(ctx); err != nil {
			return time.Time{}, nil, err
		}
	}
	at, err := l.wait(ctx)
	if err != nil {
		if lease != nil {
			l.release(lease)
		}
		return time.Time{}, nil, err
	}
	l.mu.Lock()
	l.inFlight++
	l.peak = max(l.peak, l.inFlight)
	l.mu.Unlock()
	var once sync.Once
	return at, func() {
		once.Do(func() {
			l.mu.Lock()
			l.inFlight--
			l.mu.Unlock()
			if lease != nil {
				l.release(lease)
			}
		})
	}, nil
}

// Do acquires a slot and the rates, runs fn, and releases the slot when fn
// returns. It returns the admission error if there was one, else fn's.
func (l *RedisLimiter) Do(ctx context.Context, fn func(context.Context) error) error {
	release, err := l.Acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	return fn(ctx)
}

// Close stops renewing the leases of fleet-wide slots still held and gives
// them back, and makes later and waiting calls return ErrLimiterClosed.
// Call it once every call has finished. It does not close the client.
func (l *RedisLimiter) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.isClosed = true
		l.mu.Unlock()
		close(l.closed)
	})
	l.renewers.Wait()
	l.mu.Lock()
	held := make([]*redisLease, 0, len(l.leases))
	for ls := range l.leases {
		held = append(held, ls)
	}
	l.mu.Unlock()
	for _, ls := range held {
		l.release(ls)
	}
	return nil
}

// Stats returns a snapshot of the limiter's diagnostics. Used and Usage
// are the fleet-wide counts Redis reported at this process's last
// admission attempt (not refreshed since), and MaxInFlight is the
// fleet-wide cap; every other counter is this process's own.
func (l *RedisLimiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Stats{
		Rules:        make([]RuleStats, len(l.rules)),
		Admitted:     l.stats.admitted,
		Waited:       l.stats.waited,
		TotalWait:    time.Duration(l.stats.totalWait),
		InFlight:     l.inFlight,
		PeakInFlight: l.peak,
		MaxInFlight:  l.cf.globalJobs,
		SlotWaits:    l.slotWaits,
		SlotWaitTime: l.slotWait,
		Pauses:       l.stats.pauses,
		PauseWaits:   l.stats.pauseWaits,
		PausedFor:    time.Duration(l.stats.pausedFor),
		PauseReason:  l.reason,
		PausedUntil:  l.pause,
	}
	for i, r := range l.rules {
		rs := l.stats.rules[i]
		s.Rules[i] = RuleStats{
			Rule:      r,
			Used:      l.used[i],
			Usage:     float64(l.used[i]) / float64(r.N),
			PeakUsage: float64(rs.peakUsed) / float64(r.N),
			Waits:     rs.waits,
			WaitTime:  time.Duration(rs.waitTime),
		}
	}
	s.Binding = binding(s.Rules, func(r RuleStats) float64 { return r.Usage })
	s.PeakBinding = binding(s.Rules, func(r RuleStats) float64 { return r.PeakUsage })
	return s
}

// RedisStats counts a RedisLimiter's traffic with Redis.
type RedisStats struct {
	// RoundTrips counts script calls sent to Redis, successful or not,
	// for admissions, slots and lease renewals. In steady state an
	// admission that does not wait costs one.
	RoundTrips int64
	// ScriptLoads counts calls that found the script missing (NOSCRIPT)
	// and sent it in full.
	ScriptLoads int64
	// Failures counts calls that got no usable answer.
	Failures int64
	// LeasesLost counts fleet-wide slots whose lease expired before it
	// could be renewed while their slots were all taken.
	LeasesLost int64
	// ClientTime counts admission replies decided on this process's clock
	// because the server refused TIME.
	ClientTime int64
}

// RedisStats returns the limiter's Redis traffic counters.
func (l *RedisLimiter) RedisStats() RedisStats {
	return RedisStats{
		RoundTrips:  l.roundTrips.Load(),
		ScriptLoads: l.scriptLoads.Load(),
		Failures:    l.failures.Load(),
		LeasesLost:  l.leasesLost.Load(),
		ClientTime:  l.clientTime.Load(),
	}
}

// RoundTrips returns the number of script calls sent to Redis so far.
// RoundTrips()/Stats().Admitted is the cost of an admission.
func (l *RedisLimiter) RoundTrips() int64 { return l.roundTrips.Load() }

// newID returns a member unique to this process and call, so that two
// calls in one microsecond are two members.
func (l *RedisLimiter) newID() string {
	return l.idPrefix + "." + strconv.FormatUint(l.seq.Add(1), 36)
}

// jitter returns a random delay in [0, min(5% of wait, the jitter option)].
func (l *RedisLimiter) jitter(wait time.Duration) time.Duration {
	j := min(wait/20, l.cf.jitter)
	if j <= 0 {
		return 0
	}
	return time.Duration(mrand.Int64N(int64(j) + 1))
}

// sleep waits d on the limiter's clock, or until ctx is done or the limiter
// is closed.
func (l *RedisLimiter) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := l.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-l.closed:
		return ErrLimiterClosed
	}
}

// run calls script s until Redis answers, retrying failures with capped
// exponential backoff. It gives up with an error wrapping ErrBackend once
// l.cf.timeout has passed since the first failed call without an answer,
// or at once for an answer that retrying cannot change.
func (l *RedisLimiter) run(ctx context.Context, s *redisScript, keys []string, args []any) (any, error) {
	var failingSince time.Time
	backoff := redisMinBackoff
	for {
		start := l.clock.Now()
		reply, err := l.eval(ctx, s, keys, args)
		if err == nil {
			return reply, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		l.failures.Add(1)
		if redisPermanent(err) {
			return nil, fmt.Errorf("throttle: redis quota %q: %w: %w", l.name, ErrBackend, err)
		}
		if failingSince.IsZero() {
			failingSince = start
		}
		left := l.cf.timeout - l.clock.Now().Sub(failingSince)
		if left <= 0 {
			return nil, fmt.Errorf("throttle: redis quota %q: no answer for %s: %w: %w",
				l.name, l.cf.timeout, ErrBackend, err)
		}
		// Sleep between half and all of backoff, but try once more at the
		// deadline rather than sleep past it.
		d := backoff/2 + time.Duration(mrand.Int64N(int64(backoff/2)+1))
		if err := l.sleep(ctx, min(d, left)); err != nil {
			return nil, err
		}
		backoff = min(2*backoff, redisMaxBackoff)
	}
}

// eval runs s once: EVALSHA, then EVAL if Redis does not have the script.
// The call is bounded by the Redis timeout even if the client has none.
func (l *RedisLimiter) eval(ctx context.Context, s *redisScript, keys []string, args []any) (any, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cf.timeout)
	defer cancel()
	l.roundTrips.Add(1)
	reply, err := l.client.EvalSha(ctx, s.sha, keys, args...).Result()
	// Redis errors are text, and servers and proxies word this one
	// differently ("NOSCRIPT No matching script", "ERR NOSCRIPT ..."), so
	// match the code anywhere in the message.
	if err != nil && strings.Contains(err.Error(), "NOSCRIPT") {
		l.roundTrips.Add(1)
		l.scriptLoads.Add(1)
		reply, err = l.client.Eval(ctx, s.src, keys, args...).Result()
	}
	return reply, err
}

// redisTransient lists the Redis error codes that a retry may cure: a
// server loading its data, busy with a script, out of memory or unable to
// save (writes refused for now), or a cluster resharding or failing over.
var redisTransient = [...]string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN",
	"READONLY", "NOREPLICAS", "MOVED", "ASK", "NOSCRIPT", "OOM", "MISCONF"}

// redisPermanent reports whether err is an answer that retrying cannot
// change: an error reply from Redis other than the transient ones (such as
// WRONGPASS or WRONGTYPE), or a closed client. Redis error replies are text
// whose first word is the code, so the code is all there is to go by.
func redisPermanent(err error) bool {
	if errors.Is(err, redis.ErrClosed) {
		return true
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	for _, code := range redisTransient {
		if redis.HasErrorPrefix(err, code) {
			return false
		}
	}
	return true
}

// Scripts, with their digests computed once.
var (
	redisAdmit = newRedisScript(redisAdmitLua)
	redisSlots = newRedisScript(redisSlotsLua)
)

// admitReply is a decoded reply of redisAdmitLua.
type admitReply struct {
	mismatch bool
	stored   string // the quota's rule spec, on mismatch
	admitted bool
	now      int64 // server time, microseconds
	clock    bool  // now came from the server's TIME
	wait     time.Duration
	rule     int   // index (Redis order) of the rule that needs the longest wait
	used     []int // per rule, Redis order
}

func parseAdmitReply(v any, rules int) (admitReply, error) {
	a, ok := v.([]any)
	if !ok || len(a) < 2 {
		return admitReply{}, fmt.Errorf("unexpected script reply %v", v)
	}
	code, ok := a[0].(int64)
	if !ok {
		return admitReply{}, fmt.Errorf("unexpected script reply %v", v)
	}
	var r admitReply
	if code == -1 {
		s, ok := a[1].(string)
		if !ok {
			return admitReply{}, fmt.Errorf("unexpected script reply %v", v)
		}
		return admitReply{mismatch: true, stored: s}, nil
	}
	head := 3
	if code == 0 {
		head = 5
	}
	if len(a) != head+rules {
		return admitReply{}, fmt.Errorf("unexpected script reply %v for %d rules", v, rules)
	}
	ints := make([]int64, len(a))
	for i, x := range a {
		if ints[i], ok = x.(int64); !ok {
			return admitReply{}, fmt.Errorf("unexpected script reply %v", v)
		}
	}
	r.admitted = code == 1
	r.now = ints[1]
	r.clock = ints[2] == 1
	if code == 0 {
		r.wait = time.Duration(ints[3]) * time.Microsecond
		r.rule = int(ints[4]) - 1
		if r.rule < 0 || r.rule >= rules {
			return admitReply{}, fmt.Errorf("unexpected script reply %v: no rule %d", v, r.rule+1)
		}
	}
	r.used = make([]int, rules)
	for i := range r.used {
		r.used[i] = int(ints[head+i])
	}
	return r, nil
}

// redisQueue is a FIFO lock: callers get it in the order they asked.
type redisQueue struct {
	mu      sync.Mutex
	busy    bool
	waiters []chan struct{} // a closed channel hands the lock over
}

// lock takes q, waiting behind earlier callers, unless ctx is done or
// closed is closed first.
func (q *redisQueue) lock(ctx context.Context, closed <-chan struct{}) error {
	q.mu.Lock()
	if !q.busy {
		q.busy = true
		q.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	q.waiters = append(q.waiters, ch)
	q.mu.Unlock()
	var err error
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-closed:
		err = ErrLimiterClosed
	}
	q.mu.Lock()
	for i, w := range q.waiters {
		if w == ch {
			q.waiters = slices.Delete(q.waiters, i, i+1)
			q.mu.Unlock()
			return err
		}
	}
	q.mu.Unlock()
	// Handed the lock while giving up: pass it on.
	q.unlock()
	return err
}

// unlock hands q to the next caller in line, if any.
func (q *redisQueue) unlock() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiters) > 0 {
		close(q.waiters[0])
		q.waiters = slices.Delete(q.waiters, 0, 1)
		return
	}
	q.busy = false
}

// queued returns how many callers wait for q.
func (q *redisQueue) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiters)
}
