// Package redisrate is the Redis backend of pace's limiter: it keeps several
// rate rules at once, and optionally a cap on calls in flight, for a fleet
// of processes that share a quota through Redis. It satisfies
// throttle.Backend, with the same model as throttle.Limiter and the state
// kept in Redis.
//
// Each admission attempt is one Lua script call (one round trip), for the
// calls queued in the process, in order. The script reads the server's
// clock (TIME), checks every rule for each call, counting the calls of
// the attempt admitted before it, and only if all of them allow the call
// records it in all of them at that one instant; at the first call
// refused it stops, records nothing more and tells the caller how long
// that call must wait, which the process sleeps (plus a small random
// jitter) before asking again. Clients'
// clocks therefore need not agree. A rule N/W is kept exactly (no window
// (t-W, t] of server time holds more than N admissions, or costs,
// fleet-wide) in a sorted set, or, for N > Options.CounterAbove (100,000 by default), in a
// bounded counter that may refuse a call up to W/1024 early but never
// admits one too many.
//
// All keys of a quota NAME share the hash tag {NAME}, so a Redis Cluster
// keeps them on one node:
//
//	pace:{NAME}:rules              the rule set (rules sorted by window)
//	pace:{NAME}:r<i>:<rule>        the state of rule i
//	pace:{NAME}:r<i>:<rule>:sum    the cost a cost rule holds (a counter: the costs corrected)
//	pace:{NAME}:margins            each process's margin, while in force
//	pace:{NAME}:slots              the leases of the in-flight cap (and marks of released ones)
//	pace:{NAME}:reset              when pace quota reset last forgot the quota
//
// A process whose rules differ from the ones stored gets a
// *throttle.MismatchError, from Open before anything runs, or from the
// first admission of a process that slipped in meanwhile. Every key
// expires once its window has passed unused, so a new rule set may take
// the name over after the longest window has passed idle.
//
// Fairness: within one process admission is FIFO: callers queue, and
// one attempt at a time asks Redis for the calls at the head of the
// queue. Across processes there is no queue: whoever asks first
// once room frees wins, so a process is not guaranteed a share, only the
// fleet as a whole is kept within the rules. The jitter spreads the
// retries of processes woken by the same expiry.
//
// When Redis does not answer the limiter admits nothing: it retries with
// capped exponential backoff and resumes when Redis is back, and gives up
// with an error wrapping throttle.ErrBackend once the timeout has passed
// without a successful answer. Options.OnOutage hears when Redis stops and
// starts answering. A caller who gives up (its context cancelled) does not
// wait for an answer that does not come: go-redis would hold it for its
// read timeout, so the call is left behind (see Admit), and giving a slot
// back waits at most a second. A Redis that loses its data (restarted without
// persistence, failed over to a lagging replica) forgets the admissions of
// the last window: each process finds it at its next admission, before
// admitting anything, and records again its own calls that a rule still
// counts (see Options.OnLoss). Calls of processes that have exited stay
// forgotten, and until every process has admitted again the fleet may go
// over a rule; run Redis with persistence if that matters.
package redisrate

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/internal/gate"
	"github.com/pace-cli/pace/throttle/internal/link"
)

// Client is the part of a go-redis client that a Limiter uses: scripts
// and GET. redis.UniversalClient satisfies it, and so *redis.Client,
// *redis.ClusterClient and *redis.Ring; tests can pass a fake.
type Client interface {
	redis.Scripter
	Get(ctx context.Context, key string) *redis.StringCmd
}

// Defaults of the Options.
const (
	DefaultKey     = "default"
	DefaultTimeout = 30 * time.Second
	DefaultJitter  = 10 * time.Millisecond
	DefaultLease   = 15 * time.Second
	// MinLease is the shortest Lease: a lease of a few milliseconds ran
	// out between its holder's renewals (a round trip each), and another
	// process took the slot while the call still ran.
	MinLease = time.Second
)

// Retry pacing: backoff after a failed call, and how often a caller waiting
// for a fleet-wide slot asks again.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
	slotPoll   = 100 * time.Millisecond
)

// Options configure a Limiter.
type Options struct {
	// Key names the quota; empty means DefaultKey. It may not hold '{' or
	// '}' (it becomes the Redis Cluster hash tag).
	Key string
	// Rules are kept fleet-wide. An empty set limits only the calls in
	// flight (GlobalJobs).
	Rules []throttle.Rule
	// Margin widens every rule's window, as throttle.Options.Margin does.
	// Each process's margin is kept in Redis while calls it admitted can
	// still count, and every admission widens the windows by the widest
	// margin in force across the fleet: a call admitted a window after
	// another process's must be protected from that process's lags too.
	Margin time.Duration
	// CheckLater skips the check Open and Dial make before they return
	// (a GET of the quota's rules: a round trip): a quota kept with other
	// rules is then refused by the first admission instead, with the same
	// *throttle.MismatchError, and nothing recorded. For a process that
	// admits at once (pace exec), it is one round trip less.
	CheckLater bool
	// FixedMargin says that this process never lowers its margin, as
	// pace exec, which admits one call at a fixed --margin, never does.
	// Its margin is then kept under the margin itself rather than under
	// this process: one field of pace:{NAME}:margins for every process
	// with that margin, which each moves later and none lowers. A quota
	// used by many short processes so keeps one field per margin, not one
	// per process for as long as their calls count (a day under a daily
	// rule), which every admission would read.
	FixedMargin bool
	// GlobalJobs caps the calls in flight across every process sharing
	// the quota: Admit takes a leased fleet-wide slot before it waits for
	// the rates. 0 means no cap.
	GlobalJobs int
	// Timeout is how long the limiter keeps retrying without a successful
	// answer from Redis before it gives up with an error wrapping
	// throttle.ErrBackend; 0 means DefaultTimeout.
	Timeout time.Duration
	// Jitter is the most random delay added to a wait the script asked
	// for (at most 5% of that wait), so that processes woken by the same
	// expiry do not all ask at once; 0 means DefaultJitter, negative none.
	Jitter time.Duration
	// Lease is the lease of a fleet-wide slot: a holder renews it every
	// Lease/3 while its call runs, and a slot whose holder died is free
	// again at most Lease later; 0 means DefaultLease, one shorter than
	// MinLease is taken as MinLease, and a negative one is an error.
	Lease time.Duration
	// CounterAbove keeps every rule with N > CounterAbove in a bounded
	// counter instead of an exact log; 0 means 100,000,
	// negative counters for every rule.
	CounterAbove int
	// OnOutage, if set, is called when Redis stops answering (a call
	// failed without an answer, or went a second without one), or answers
	// with an error a retry may cure (Outage.Refused), and when it
	// answers again. Calls come from the limiter's goroutines, one at a
	// time; Err never holds a password.
	OnOutage func(Outage)

	// OnLoss, if set, is called when an admission finds, before it
	// admits anything, that Redis no longer holds this process's latest
	// call although a rule's window still does (its rule spec, a log's
	// member, a counter's key): Redis lost the quota's records (restarted
	// without persistence, flushed, evicted keys, failed over to a
	// replica that had not caught up). The limiter then records again the
	// calls it admitted that a rule still counts (Loss.Restored of them),
	// before it admits more; every other process sharing the quota does
	// the same at its next admission. The calls of processes that have
	// exited, or admit nothing more, are not restored, and until each
	// process has admitted again the fleet may go over a rule. A quota
	// that pace quota reset forgot is no loss: what it held is not
	// restored. Calls come from the admitting goroutine, once per loss.
	OnLoss func(Loss)

	// OnClientClock, if set, is called once, at the first admission
	// decided on this process's clock because Redis refused TIME in
	// scripts (see Admit): the processes sharing the quota then keep it
	// on their own clocks, which must agree, or one whose clock runs ahead
	// lets the fleet over a rule.
	OnClientClock func()

	slotPoll time.Duration // tests shorten it
	// anyName skips CheckKey: Inspect and Reset reach the quotas of an
	// older pace, whose names it did not check.
	anyName bool
}

// Loss is Redis found to have lost a quota in use (see Options.OnLoss).
type Loss struct {
	// Last is when this process last recorded a call in the quota, and
	// At when the admission attempt that found it gone (and admitted
	// nothing) ran, both by Redis's clock.
	Last, At time.Time
	// Window is the quota's longest window: the calls recorded in the
	// window before At may have been forgotten.
	Window time.Duration
	// Restored is how many of this process's calls that a rule still
	// counts the quota holds again (in some rule; for a quota kept only in
	// counters, the most in one), whether recorded again or found there
	// (only some of its keys were lost).
	Restored int
}

// Outage is a change in whether Redis answers.
type Outage struct {
	// Down is true when Redis stopped answering, false when it answers
	// again.
	Down bool
	// Since is when the first unanswered call began.
	Since time.Time
	// Err says why, when Down and a call failed; nil when a call merely
	// went unanswered for a while.
	Err error
	// Refused says that Redis answers, but with an error a retry may cure
	// (Err, when Down): a read-only replica (READONLY), a server loading
	// its data (LOADING), out of memory (OOM) or unable to save (MISCONF).
	// Nothing is admitted meanwhile, as when it does not answer.
	Refused bool
}

// Limiter keeps rules for every process sharing a quota through Redis.
// Most callers want Admit. Make one with Open (or Dial, which also makes
// its client). It is safe for concurrent use and satisfies
// throttle.Backend. Close gives back the slots it holds and, if Dial made
// the client, closes it.
type Limiter struct {
	client  Client
	owned   bool // Close closes client
	name    string
	rules   []throttle.Rule // in the order given
	order   []int           // order[j] = index in rules of the j-th rule in Redis (sorted)
	spec    string          // canonical rule spec stored with the quota
	keys    []string        // rules key, then two per rule in Redis order
	slotKey string
	margKey string // pace:{NAME}:margins
	// admitKeys are the keys of admitLua and repairLua: keys, then
	// margKey and pace:{NAME}:reset.
	admitKeys []string
	cf        Options
	health    *health
	idPrefix  string
	seq       atomic.Uint64

	renewMu  sync.Mutex // orders starting a lease's renewer with Close
	renewers sync.WaitGroup
	// life ends once Close has given the slots back: a renewal still
	// under way then is left behind (see await).
	life    context.Context
	endLife context.CancelFunc
	// calls counts the goroutines of calls to Redis that a caller may
	// leave behind (see await) and of releases sent in the background.
	calls goroutines

	// mem remembers this process's admissions that a rule may still
	// count, to record them again in a quota Redis lost; longest is the
	// longest window (µs).
	mem     *memory
	longest int64
	// maxWait is the longest a call that fits by a steady clock can be
	// told to wait (µs), margin excluded: the longest window, and for a
	// counter its bucket too.
	maxWait int64

	roundTrips  atomic.Int64
	scriptLoads atomic.Int64
	failures    atomic.Int64
	leasesLost  atomic.Int64
	clientTime  atomic.Int64

	// core keeps the admission turn, waits, pauses, margins, the tally
	// and the calls in flight; Redis brings the decisions and the slots.
	core *gate.Core
}

// Open returns a limiter that keeps opts.Rules for every process sharing
// the quota opts.Key through client, after checking that the quota is not
// kept in Redis with other rules. While Redis does not answer it retries
// with backoff, for up to opts.Timeout. Its errors wrap
// a *throttle.MismatchError (the quota is kept with other rules),
// throttle.ErrBackend (Redis refused or did not answer in time),
// a *throttle.RuleError, or are ctx's.
func Open(ctx context.Context, client Client, opts Options) (*Limiter, error) {
	l, err := newLimiter(client, opts)
	if err != nil {
		return nil, err
	}
	if err := l.checkStored(ctx); err != nil {
		l.endLife()
		return nil, err
	}
	return l, nil
}

// MaxKeyLen is the longest quota name, in bytes.
const MaxKeyLen = 256

// CheckKey returns an error saying what a quota's name should be, if it
// is not that, or nil: it is a name of at most MaxKeyLen bytes of UTF-8, without '{' or
// '}' (which would change the Redis Cluster slot of its keys) and without
// control characters (which pace quota show would send to a terminal).
func CheckKey(key string) error {
	switch {
	case len(key) > MaxKeyLen:
		return fmt.Errorf("want a name of at most %d bytes, not %d", MaxKeyLen, len(key))
	case strings.ContainsAny(key, "{}"):
		return errors.New("want a name without '{' or '}'")
	case !utf8.ValidString(key) || strings.IndexFunc(key, unicode.IsControl) >= 0:
		return errors.New("want a name without control characters")
	}
	return nil
}

// newLimiter builds a limiter without contacting Redis.
func newLimiter(client Client, opts Options) (*Limiter, error) {
	cf := opts
	cf.Key = cmp.Or(cf.Key, DefaultKey)
	cf.Timeout = cmp.Or(cf.Timeout, DefaultTimeout)
	if cf.Lease < 0 {
		return nil, fmt.Errorf("redisrate: lease %v: want a positive duration (0 for the default, %v)", cf.Lease, DefaultLease)
	}
	cf.Lease = max(cmp.Or(cf.Lease, DefaultLease), MinLease)
	cf.slotPoll = cmp.Or(cf.slotPoll, slotPoll)
	switch {
	case cf.Jitter == 0:
		cf.Jitter = DefaultJitter
	case cf.Jitter < 0:
		cf.Jitter = 0
	}
	switch {
	case cf.CounterAbove == 0:
		cf.CounterAbove = link.CounterAbove
	case cf.CounterAbove < 0:
		cf.CounterAbove = 0
	}
	cf.Margin = link.ClampMargin(cf.Margin)
	cf.GlobalJobs = max(cf.GlobalJobs, 0)
	if client == nil {
		return nil, errors.New("redisrate: nil client")
	}
	if err := CheckKey(cf.Key); err != nil && !cf.anyName {
		return nil, fmt.Errorf("redisrate: key %q: %w", cf.Key, err)
	}
	if err := gate.Validate(cf.Rules); err != nil {
		return nil, err
	}
	l := &Limiter{
		client:   client,
		name:     cf.Key,
		rules:    slices.Clone(cf.Rules),
		cf:       cf,
		idPrefix: rand.Text()[:16],
		slotKey:  "pace:{" + cf.Key + "}:slots",
		margKey:  "pace:{" + cf.Key + "}:margins",
	}
	l.life, l.endLife = context.WithCancel(context.Background())
	l.core = gate.NewCore(gate.Config{Name: "redisrate", Rules: l.rules, GlobalJobs: cf.GlobalJobs,
		Margin: cf.Margin, Jitter: cf.Jitter, Timeout: cf.Timeout}, (*redisSide)(l))
	l.health = &health{timeout: cf.Timeout, report: cf.OnOutage,
		final: func(err error) bool { return redirected(client, err) }}

	// Rules are stored sorted, so that processes listing the same rules in
	// another order share the quota.
	l.order = make([]int, len(l.rules))
	for i := range l.order {
		l.order[i] = i
	}
	slices.SortStableFunc(l.order, func(a, b int) int {
		ra, rb := l.rules[a], l.rules[b]
		return cmp.Or(cmp.Compare(ra.Window, rb.Window), boolCompare(ra.Cost, rb.Cost), cmp.Compare(ra.N, rb.N))
	})
	sorted := make([]throttle.Rule, len(l.rules))
	for j, i := range l.order {
		sorted[j] = l.rules[i]
	}
	// What every process must agree on goes in the spec: the rules, the
	// form each is kept in, and the in-flight cap.
	spec := []string{throttle.FormatRules(sorted)}
	if cf.CounterAbove != link.CounterAbove && slices.ContainsFunc(sorted, func(r throttle.Rule) bool {
		return (r.N > cf.CounterAbove) != (r.N > link.CounterAbove)
	}) {
		spec = append(spec, "counter-above="+strconv.Itoa(cf.CounterAbove))
	}
	if cf.GlobalJobs > 0 {
		spec = append(spec, "global-jobs="+strconv.Itoa(cf.GlobalJobs))
	}
	l.spec = strings.TrimSpace(strings.Join(spec, " "))

	for _, r := range sorted {
		w := r.Window.Microseconds()
		l.longest = max(l.longest, w)
		if l.mode(r) == modeCounter {
			w += (w + 1023) / 1024
		}
		l.maxWait = max(l.maxWait, w)
	}

	l.keys = make([]string, 0, 1+2*len(sorted))
	l.keys = append(l.keys, "pace:{"+cf.Key+"}:rules")
	for j, r := range sorted {
		name := r.String()
		if l.mode(r) == modeCounter {
			name += ":counter"
		}
		k := "pace:{" + cf.Key + "}:r" + strconv.Itoa(j) + ":" + name
		l.keys = append(l.keys, k, k+":sum")
	}
	l.admitKeys = append(slices.Clone(l.keys), l.margKey, resetKey(cf.Key))
	bases, _, _, _ := l.windows(0)
	modes, ns, costs := make([]string, len(sorted)), make([]int, len(sorted)), make([]bool, len(sorted))
	for j, r := range sorted {
		modes[j], ns[j], costs[j] = l.mode(r), r.N, r.Cost
	}
	l.mem = newMemory(bases, modes, ns, costs)
	return l, nil
}

func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Modes of a rule's state in Redis; see helpersLua.
const (
	modeCount   = "0"
	modeCounter = "1"
	modeCost    = "2"
)

func (l *Limiter) mode(r throttle.Rule) string {
	switch {
	case r.N > l.cf.CounterAbove:
		return modeCounter
	case r.Cost:
		return modeCost
	}
	return modeCount
}

// Spec returns the rule spec this limiter stores with its quota and
// compares at every admission: its rules sorted by window, plus whatever
// else every process sharing the quota must agree on (the fleet-wide cap).
func (l *Limiter) Spec() string { return l.spec }

// Rules returns the limiter's rules, in the order given.
func (l *Limiter) Rules() []throttle.Rule { return slices.Clone(l.rules) }

// Keys returns the Redis keys of the quota: the rules key, then two keys
// per rule (in Redis order, sorted by window), then the margins key and
// the slots key.
func (l *Limiter) Keys() []string { return append(slices.Clone(l.keys), l.margKey, l.slotKey) }

// windows returns each rule's window in Redis order, margin excluded (the
// script adds the fleet's), in microseconds rounded up (Redis keeps
// microseconds: a window is never shortened); the time to live of the
// rules key in ms, margin excluded; and, in microseconds, how long this
// process's margin stays in force after an admission: as long as the call
// counts, its longest window plus margin (this process's).
func (l *Limiter) windows(margin time.Duration) (ws []int64, ttl int64, own, ownTTL int64) {
	ws = make([]int64, len(l.order))
	var longest int64
	for j, i := range l.order {
		r := l.rules[i]
		w := int64((r.Window + time.Microsecond - 1) / time.Microsecond)
		ws[j] = w
		if l.mode(r) == modeCounter {
			longest = max(longest, w+(w+1023)/1024)
		} else {
			longest = max(longest, w)
		}
	}
	own = int64((margin + time.Microsecond - 1) / time.Microsecond)
	return ws, longest/1000 + 2, own, longest + own
}

// checkStored checks, before any job runs, that the quota is not kept in
// Redis with other rules: one GET of the rules key, retried while Redis
// does not answer; nothing with Options.CheckLater (the admission script
// checks too).
func (l *Limiter) checkStored(ctx context.Context) error {
	if l.cf.CheckLater {
		return nil
	}
	var stored string
	err := l.retry(ctx, func(ctx context.Context) error {
		var err error
		stored, err = await(ctx, &l.calls, func() (string, error) { return l.client.Get(ctx, l.keys[0]).Result() }, nil)
		if errors.Is(err, redis.Nil) {
			stored, err = "", nil // nobody keeps the quota now: the first admission claims it
		}
		return err
	})
	if err != nil {
		return err
	}
	if stored != "" && stored != l.spec {
		return l.mismatch(stored)
	}
	return nil
}

// mismatch is the error for a quota kept with the rule spec stored.
func (l *Limiter) mismatch(stored string) error {
	return &throttle.MismatchError{Key: l.name, Stored: stored, Spec: l.spec}
}

// Admit takes a fleet-wide slot (when GlobalJobs set a cap, waiting FIFO
// within this process for one), then waits until every rule admits a call
// of the given cost fleet-wide and records it. The Admission's At is the
// instant by the Redis server's clock (by this process's clock under the
// fallback for servers that refuse TIME in scripts). If Admit fails it
// holds nothing: a slot taken before the rate wait failed is given back
// (without waiting for Redis's answer once ctx has ended).
//
// Admit returns as soon as ctx is cancelled, even while Redis does not
// answer (go-redis itself would wait out its read timeout): the call
// under way is left behind. If it runs in Redis all the same, it may
// record the admission, which then counts against the quota although the
// caller does not go ahead, or take a slot, which is given back once its
// answer comes (or runs out with its lease). The error is only ever on
// that safe side.
func (l *Limiter) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	return l.core.Admit(ctx, cost)
}

// redisSide is a Limiter as its core sees it (gate.Store): the decisions
// and the slots.
type redisSide Limiter

// Correct changes the cost recorded for the admission id in the cost
// rules still holding it, in one script call, and returns each rule's use
// after it (given order; -1 for a count rule); it implements gate.Store.
// While Redis does not answer it retries, as an admission does, until ctx
// is cancelled (the try under way, left behind, may still be recorded) or
// the timeout has passed. A ctx that has ended before the first try still
// sends it, without waiting for the answer.
func (rs *redisSide) Correct(ctx context.Context, id uint64, at time.Time, from, to int, margin time.Duration) ([]int, error) {
	l := (*Limiter)(rs)
	var keys []string
	var args []any
	ws, _, own, _ := l.windows(margin)
	args = append(args, l.memberID(id), at.UnixMicro(), from, to, time.Now().UnixMicro(), own, l.marginField(own))
	for j, i := range l.order {
		r := l.rules[i]
		if !r.Cost {
			continue
		}
		keys = append(keys, l.keys[1+2*j], l.keys[2+2*j])
		args = append(args, r.N, ws[j], l.mode(r), 0)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	n := len(keys) / 2
	keys = append(keys, l.margKey)
	// The correction is sent even once ctx has ended: the call was made
	// and its true cost is owed, whether or not its caller still waits.
	// ctx ends the wait for the answer, and the retries.
	var reply any
	err := l.retry(ctx, func(ctx context.Context) error {
		var err error
		reply, err = await(ctx, &l.calls, func() (any, error) {
			sctx, cancel := detach(ctx)
			defer cancel()
			return l.evalNow(sctx, correctScript(), keys, args)
		}, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	a, ok := reply.([]any)
	if !ok || len(a) != 1+n {
		return nil, fmt.Errorf("redisrate: quota %q: unexpected reply %v: %w", l.name, reply, throttle.ErrBackend)
	}
	// Only once Redis has it: a correction that failed is sent again
	// from the same cost, and a repair meanwhile records the old one.
	l.mem.correct(id, at.UnixMicro(), from, to)
	used := make([]int, len(l.rules))
	for i := range used {
		used[i] = -1
	}
	k := 1
	for _, i := range l.order {
		if !l.rules[i].Cost {
			continue
		}
		if n, ok := a[k].(int64); ok {
			used[i] = int(n)
		}
		k++
	}
	return used, nil
}

// Admit runs one admission script call for calls of the given costs, in
// order: at Redis's instant it admits each call that every rule allows,
// counting the calls admitted before it, records it in all of them, and
// stops at the first call refused. It implements gate.Store.
func (rs *redisSide) Admit(ctx context.Context, costs []int, margin time.Duration) (gate.Decision, error) {
	l := (*Limiter)(rs)
	m := uint64(len(costs))
	id := l.seq.Add(m) - m + 1 // the calls' ids are id, id+1, ...
	ws, ttl, own, ownTTL := l.windows(margin)
	k := len(l.order)
	args := make([]any, 0, 9+4*k+(len(costs)-1)*(1+k))
	args = append(args, l.spec, l.memberID(id), time.Now().UnixMicro(), ttl, own, ownTTL, l.marginField(own), int64(0), "")
	for j, i := range l.order {
		r := l.rules[i]
		args = append(args, r.N, ws[j], l.mode(r), weightOf(r, costs[0]))
	}
	for x, cost := range costs[1:] {
		args = append(args, l.memberID(id+uint64(x)+1))
		for _, i := range l.order {
			args = append(args, weightOf(l.rules[i], cost))
		}
	}
	var r admitReply
	var rtt time.Duration
	var replied time.Time
	for {
		// The latest admission, for the script to check that Redis still
		// holds it: after a repair, nothing (see memory.check).
		last, lastID := l.mem.latest()
		args[7], args[8] = last, ""
		if last > 0 {
			args[8] = l.memberID(lastID)
		}
		sent := time.Now()
		reply, err := l.run(ctx, admitScript(), l.admitKeys, args, nil)
		replied = time.Now()
		rtt = replied.Sub(sent)
		if err != nil {
			return gate.Decision{}, err
		}
		r, err = parseAdmitReply(reply, len(l.rules), len(costs))
		if err != nil {
			return gate.Decision{}, fmt.Errorf("redisrate: quota %q: %w: %w", l.name, throttle.ErrBackend, err)
		}
		if r.mismatch {
			return gate.Decision{}, l.mismatch(r.stored)
		}
		if !r.lost {
			break
		}
		// Redis lost records this process made: record them again, then
		// ask again, the same calls with the same ids (nothing was
		// admitted).
		restored, err := l.repair(ctx, margin, last)
		if err != nil {
			return gate.Decision{}, err
		}
		if l.cf.OnLoss != nil {
			l.cf.OnLoss(Loss{Last: time.UnixMicro(last), At: time.UnixMicro(r.now),
				Window: time.Duration(l.longest) * time.Microsecond, Restored: restored})
		}
	}
	if !r.clock && l.clientTime.Add(1) == 1 && l.cf.OnClientClock != nil {
		l.cf.OnClientClock()
	}
	if r.reset {
		// pace quota reset forgot the calls: so does this process.
		l.mem.forget()
	}
	if r.admitted > 0 {
		l.mem.add(id, r.now, costs[:r.admitted], r.margin.Microseconds())
	}
	// A call that fits by a steady clock never waits longer than the
	// longest window plus the fleet's margin. Redis asks for more when its
	// clock stepped back since calls were recorded (a clock set back, a
	// failover to a server whose clock lags): they lie in its future, and
	// the call would wait out the step too, however soon the clock is put
	// right. It asks again by then instead; Redis still decides.
	wait := min(r.wait, time.Duration(l.maxWait+1000)*time.Microsecond+r.margin)
	d := gate.Decision{Admitted: r.admitted, At: time.UnixMicro(r.now), ID: id, Wait: wait,
		Used: make([]int, len(l.rules)), Fleet: r.margin,
		Latency: rtt / 2, Decided: replied} // the reply's way back from Redis's decision, then the hand-over
	for j, i := range l.order {
		d.Used[i] = r.used[j]
	}
	if r.admitted < len(costs) {
		d.Rule = l.order[r.rule]
	}
	return d, nil
}

// weightOf returns what a call of the given cost weighs in r.
func weightOf(r throttle.Rule, cost int) int {
	if r.Cost {
		return cost
	}
	return 1
}

// PauseUntil makes this process admit nothing before t, whatever Redis
// says: a server that answered 429 with Retry-After has the last word. The
// pause is local; other processes sharing the quota are not told. reason
// says why, for diagnostics. A pause never shortens one already in force.
func (l *Limiter) PauseUntil(t time.Time, reason string) { l.core.PauseUntil(t, reason) }

// Seed does nothing: Redis keeps the quota across runs.
func (l *Limiter) Seed([]throttle.Call) error { return nil }

// SetMargin makes d this process's margin from the next script call on:
// every admission widens the windows by the widest margin in force across
// the fleet. A margin wider than the fleet's is also recorded in Redis at
// once, in the background, so that the other processes widen their
// windows before this one next asks to admit a call. A negative d is
// treated as 0.
func (l *Limiter) SetMargin(d time.Duration) { l.core.SetMargin(d) }

// Publish records this process's margin in Redis at once and returns the
// fleet's widest margin; it implements gate.Store.
func (rs *redisSide) Publish(ctx context.Context, margin time.Duration) (time.Duration, error) {
	l := (*Limiter)(rs)
	_, _, own, ownTTL := l.windows(margin)
	reply, err := l.eval(ctx, marginScript(), []string{l.margKey}, []any{time.Now().UnixMicro(), own, l.marginField(own), ownTTL}, nil)
	if err != nil {
		return 0, err
	}
	m, ok := reply.(int64)
	if !ok {
		return 0, fmt.Errorf("redisrate: quota %q: unexpected reply %v: %w", l.name, reply, throttle.ErrBackend)
	}
	return time.Duration(m) * time.Microsecond, nil
}

// Close stops renewing the leases of fleet-wide slots still held and gives
// them back, and makes later and waiting calls return throttle.ErrClosed.
// Call it once every call has finished. It closes the client if Dial made
// it. It does not wait on a Redis that stopped answering: a call under
// way is left behind (it ends at the client's read timeout, or at once
// when Close closes the client), and the releases are waited for at most
// a second, after which a slot not given back stays taken until its
// lease runs out.
func (l *Limiter) Close() error {
	if !l.core.Shutdown() {
		return nil
	}
	ctx, cancel := l.releaseContext(context.Background())
	l.core.ReleaseHeld(ctx)
	cancel()
	l.endLife()
	l.renewMu.Lock()
	//lint:ignore SA2001 the lock orders Close after a renewer being started
	l.renewMu.Unlock()
	l.renewers.Wait()
	l.health.setReport(nil)
	if l.owned {
		if c, ok := l.client.(interface{ Close() error }); ok {
			err := c.Close()
			l.calls.Wait() // the calls left behind end with their connections
			return err
		}
	}
	return nil
}

// Stats returns a snapshot of the limiter's diagnostics. Used and Usage
// are the fleet-wide weights Redis reported at this process's last
// admission attempt (not refreshed since), and MaxInFlight is the
// fleet-wide cap; every other counter is this process's own. Store counts
// the traffic with Redis.
func (l *Limiter) Stats() throttle.Stats {
	return l.core.Stats(throttle.StoreStats{
		Name:       "redis",
		RoundTrips: l.roundTrips.Load(),
		Failures:   l.failures.Load(),
		LeasesLost: l.leasesLost.Load(),
		ClientTime: l.clientTime.Load(),
	})
}

// marginField returns the field of pace:{NAME}:margins this process keeps
// its margin own (microseconds) under: its id, or, with
// Options.FixedMargin, "~" and the margin, shared by every process with
// that margin.
func (l *Limiter) marginField(own int64) string {
	if l.cf.FixedMargin {
		return "~" + strconv.FormatInt(own, 10)
	}
	return l.idPrefix
}

// memberID returns the id of admission id in Redis: unique to this process
// and call, so that two calls in one microsecond are two members.
func (l *Limiter) memberID(id uint64) string {
	return l.idPrefix + "." + strconv.FormatUint(id, 36)
}

// admitReply is a decoded reply of admitLua.
type admitReply struct {
	mismatch bool
	stored   string        // the quota's rule spec, on mismatch
	admitted int           // how many of the calls asked were admitted
	now      int64         // server time, microseconds
	clock    bool          // now came from the server's TIME
	fresh    bool          // Redis kept no rule spec for the quota before the call
	lost     bool          // Redis lost records of the caller's: nothing admitted (see admitLua)
	reset    bool          // the quota was reset since the caller's latest admission
	margin   time.Duration // the fleet's widest margin, which the script applied
	wait     time.Duration // for the first call refused
	rule     int           // index (Redis order) of the rule that needs the longest wait
	used     []int         // per rule, Redis order
}

// parseAdmitReply decodes a reply of admitLua for the given number of
// rules and of calls asked.
func parseAdmitReply(v any, rules, calls int) (admitReply, error) {
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
	if code == 2 {
		if len(a) != 3 {
			return admitReply{}, fmt.Errorf("unexpected script reply %v", v)
		}
		now, ok1 := a[1].(int64)
		flags, ok2 := a[2].(int64)
		if !ok1 || !ok2 {
			return admitReply{}, fmt.Errorf("unexpected script reply %v", v)
		}
		return admitReply{lost: true, now: now, clock: flags&1 == 1}, nil
	}
	head, tail := 4, 0
	if code == 0 {
		head, tail = 6, 1
	}
	if len(a) != head+rules+tail {
		return admitReply{}, fmt.Errorf("unexpected script reply %v for %d rules", v, rules)
	}
	ints := make([]int64, len(a))
	for i, x := range a {
		if ints[i], ok = x.(int64); !ok {
			return admitReply{}, fmt.Errorf("unexpected script reply %v", v)
		}
	}
	r.admitted = calls
	r.now = ints[1]
	r.clock = ints[2]&1 == 1
	r.fresh = ints[2]&2 != 0
	r.reset = ints[2]&4 != 0
	r.margin = time.Duration(ints[3]) * time.Microsecond
	if code == 0 {
		r.wait = time.Duration(ints[4]) * time.Microsecond
		r.rule = int(ints[5]) - 1
		if r.rule < 0 || r.rule >= rules {
			return admitReply{}, fmt.Errorf("unexpected script reply %v: no rule %d", v, r.rule+1)
		}
		r.admitted = int(ints[len(ints)-1])
		if r.admitted < 0 || r.admitted >= calls {
			return admitReply{}, fmt.Errorf("unexpected script reply %v: %d of %d calls admitted", v, r.admitted, calls)
		}
	}
	r.used = make([]int, rules)
	for i := range r.used {
		r.used[i] = int(ints[head+i])
	}
	return r, nil
}
