package redisrate_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// Unit tests of the limiter's client side run against fakeRedis, a client
// that answers as the scripts would, inside testing/synctest bubbles:
// time.Now and timers are fake, time moves only when every goroutine in
// the bubble is blocked, so waits are exact and synctest.Wait() shows that
// something has not happened yet. A bubble's clock starts at midnight UTC,
// 2000-01-01. The scripts themselves are tested against real servers in
// live_test.go.

// fakeRedis is a Client. Script calls are answered by handle, or by
// scriptReply when handle is nil. EVALSHA of a digest in missing answers
// noscript (redis.ErrNoScript if nil) until an EVAL loads the script. GET
// answers stored ("" for none), or getErr while set.
type fakeRedis struct {
	mu       sync.Mutex
	calls    []fakeCall
	gets     int
	missing  map[string]bool
	noscript error
	stored   string
	getErr   func(n int) error // error for the nth GET (1-based), nil for none
	handle   func(c fakeCall) (any, error)
	leases   map[string]bool // fleet-wide slots held, as slotsLua keeps them
	released map[string]bool // leases released, whose marks slotsLua keeps
}

// fakeCall is one script call the fake received.
type fakeCall struct {
	ctx  context.Context
	at   time.Time // when it was made
	eval bool      // EVAL, not EVALSHA
	sha  string
	keys []string
	args []any
}

func newFake() *fakeRedis {
	return &fakeRedis{missing: map[string]bool{}, leases: map[string]bool{}, released: map[string]bool{}}
}

// op names the call: "admit", "correct", "margin", or the slots
// operation ("take", "renew", "release").
func (c fakeCall) op() string {
	switch c.sha {
	case redisrate.SlotsSHA:
		return c.args[0].(string)
	case redisrate.CorrectSHA:
		return "correct"
	case redisrate.AdmitSHA:
		return "admit"
	case redisrate.MarginSHA:
		return "margin"
	case redisrate.RepairSHA:
		return "repair"
	}
	return "unknown script " + c.sha
}

// member returns the admission or lease id the call is about.
func (c fakeCall) member() any {
	if c.op() == "correct" {
		return c.args[0]
	}
	return c.args[1]
}

// ruleArgs returns the per-rule arguments of an admit or correct call:
// N, window, mode, weight (of the first call).
func (c fakeCall) ruleArgs() [][]any {
	first := 7
	k := (len(c.args) - first) / 4
	if c.op() == "admit" {
		first = 9
		k = (len(c.keys) - 3) / 2
	}
	var rs [][]any
	for i := range k {
		rs = append(rs, c.args[first+4*i:first+4*i+4])
	}
	return rs
}

// batch returns, for an admit call, each call's member id and its weight
// in each rule.
func (c fakeCall) batch() (ids []any, weights [][]int) {
	rs := c.ruleArgs()
	ids = append(ids, c.args[1])
	var w []int
	for _, r := range rs {
		w = append(w, r[3].(int))
	}
	weights = append(weights, w)
	for i := 9 + 4*len(rs); i < len(c.args); i += 1 + len(rs) {
		ids = append(ids, c.args[i])
		w = nil
		for _, x := range c.args[i+1 : i+1+len(rs)] {
			w = append(w, x.(int))
		}
		weights = append(weights, w)
	}
	return ids, weights
}

func (f *fakeRedis) setHandle(h func(c fakeCall) (any, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handle = h
}

func (f *fakeRedis) record(ctx context.Context, eval bool, sha string, keys []string, args []any) (fakeCall, bool, func(fakeCall) (any, error), error) {
	c := fakeCall{ctx: ctx, at: time.Now(), eval: eval, sha: sha, keys: slices.Clone(keys), args: slices.Clone(args)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	missing := f.missing[sha]
	if eval {
		delete(f.missing, sha)
		missing = false
	}
	noscript := f.noscript
	if noscript == nil {
		noscript = redis.ErrNoScript
	}
	return c, missing, f.handle, noscript
}

func (f *fakeRedis) answer(c fakeCall, missing bool, noscript error, h func(fakeCall) (any, error)) *redis.Cmd {
	if missing {
		return redis.NewCmdResult(nil, noscript)
	}
	if h == nil {
		return redis.NewCmdResult(f.scriptReply(c), nil)
	}
	return redis.NewCmdResult(h(c))
}

func (f *fakeRedis) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if err := ctx.Err(); err != nil {
		return redis.NewCmdResult(nil, err) // go-redis sends nothing for a context already ended
	}
	c, missing, h, noscript := f.record(ctx, false, sha, keys, args)
	return f.answer(c, missing, noscript, h)
}

func (f *fakeRedis) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	if err := ctx.Err(); err != nil {
		return redis.NewCmdResult(nil, err)
	}
	sum := sha1.Sum([]byte(src))
	c, _, h, _ := f.record(ctx, true, hex.EncodeToString(sum[:]), keys, args)
	return f.answer(c, false, nil, h)
}

func (f *fakeRedis) EvalShaRO(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return f.EvalSha(ctx, sha, keys, args...)
}

func (f *fakeRedis) EvalRO(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	return f.Eval(ctx, src, keys, args...)
}

func (f *fakeRedis) ScriptExists(_ context.Context, hashes ...string) *redis.BoolSliceCmd {
	f.mu.Lock()
	defer f.mu.Unlock()
	ok := make([]bool, len(hashes))
	for i, h := range hashes {
		ok[i] = !f.missing[h]
	}
	return redis.NewBoolSliceResult(ok, nil)
}

func (f *fakeRedis) ScriptLoad(_ context.Context, src string) *redis.StringCmd {
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.missing, sha)
	return redis.NewStringResult(sha, nil)
}

func (f *fakeRedis) Get(context.Context, string) *redis.StringCmd {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	if f.getErr != nil {
		if err := f.getErr(f.gets); err != nil {
			return redis.NewStringResult("", err)
		}
	}
	if f.stored == "" {
		return redis.NewStringResult("", redis.Nil)
	}
	return redis.NewStringResult(f.stored, nil)
}

// Calls returns the script calls so far.
func (f *fakeRedis) Calls() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// ops returns the op of every script call so far.
func (f *fakeRedis) ops() []string {
	var ops []string
	for _, c := range f.Calls() {
		ops = append(ops, c.op())
	}
	return ops
}

// held returns the fleet-wide slots held now.
func (f *fakeRedis) held() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.leases)
}

// scriptReply answers c as the scripts would for a quota with room for
// every call: an admission is admitted (each rule then holds its weight),
// a correction reports the true cost, and slots are kept in f.leases
// (leases never expire).
func (f *fakeRedis) scriptReply(c fakeCall) any {
	switch c.op() {
	case "admit":
		_, weights := c.batch()
		used := make([]int, len(weights[0]))
		for _, w := range weights {
			for i, x := range w {
				used[i] += x
			}
		}
		return admitted(used...)
	case "correct":
		var used []int
		for range c.ruleArgs() {
			used = append(used, c.args[3].(int))
		}
		return corrected(used...)
	case "margin":
		return c.args[1]
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id, limit := c.args[1].(string), c.args[2].(int)
	now := time.Now().UnixMicro()
	switch c.op() {
	case "take":
		if f.leases[id] || len(f.leases) < limit {
			f.leases[id] = true
			return []any{int64(1), now, int64(len(f.leases))}
		}
		return []any{int64(0), now, int64(len(f.leases)), c.args[3].(int64)}
	case "renew":
		switch {
		case f.released[id]:
			return []any{int64(3), now}
		case f.leases[id]:
			return []any{int64(1), now}
		case len(f.leases) < limit:
			f.leases[id] = true
			return []any{int64(2), now}
		}
		return []any{int64(0), now}
	case "release":
		held := f.leases[id]
		delete(f.leases, id)
		if held {
			f.released[id] = true
			return []any{int64(1), now}
		}
		return []any{int64(0), now}
	}
	panic("fakeRedis: " + c.op())
}

// redisErr is an error reply from Redis, as go-redis returns them.
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

// errConnRefused is what go-redis returns when nothing listens.
var errConnRefused = errors.New("dial tcp 127.0.0.1:1: connect: connection refused")

// Replies of the scripts, at the bubble's now, with a fleet margin of 0.
// used is per rule in Redis order; rule is 1-based, as admitLua sends it.

func admitted(used ...int) []any {
	r := []any{int64(1), time.Now().UnixMicro(), int64(1), int64(0)}
	for _, u := range used {
		r = append(r, int64(u))
	}
	return r
}

func refused(wait time.Duration, rule int, used ...int) []any {
	return partly(0, wait, rule, used...)
}

// partly is the reply that admits the first n calls of a batch and
// refuses the next.
func partly(n int, wait time.Duration, rule int, used ...int) []any {
	r := []any{int64(0), time.Now().UnixMicro(), int64(1), int64(0), wait.Microseconds(), int64(rule)}
	for _, u := range used {
		r = append(r, int64(u))
	}
	return append(r, int64(n))
}

func corrected(used ...int) []any {
	r := []any{time.Now().UnixMicro()}
	for _, u := range used {
		r = append(r, int64(u))
	}
	return r
}

func full(held int, wait time.Duration) []any {
	return []any{int64(0), time.Now().UnixMicro(), int64(held), wait.Microseconds()}
}

// openFake opens a limiter on f for the quota "api" keeping spec, with o's
// other options. Jitter 0 means none here (not the default), so that waits
// are exact. The limiter is closed when the test ends.
func openFake(t *testing.T, f *fakeRedis, spec string, o redisrate.Options) *redisrate.Limiter {
	t.Helper()
	rules, err := throttle.ParseRules(spec)
	if err != nil {
		t.Fatal(err)
	}
	o.Rules = rules
	if o.Key == "" {
		o.Key = "api"
	}
	if o.Jitter == 0 {
		o.Jitter = -1
	}
	l, err := redisrate.Open(context.Background(), f, o)
	if err != nil {
		t.Fatalf("Open(%q) = %v", spec, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// goAdmit runs l.Admit(ctx, cost) in a goroutine.
func goAdmit(ctx context.Context, l *redisrate.Limiter, cost int) <-chan admitResult {
	done := make(chan admitResult, 1)
	go func() {
		a, err := l.Admit(ctx, cost)
		done <- admitResult{a, err}
	}()
	return done
}

type admitResult struct {
	a   throttle.Admission
	err error
}

// returned reports whether done has delivered, after every goroutine of
// the bubble has settled.
func returned(done <-chan admitResult) (admitResult, bool) {
	synctest.Wait()
	select {
	case r := <-done:
		return r, true
	default:
		return admitResult{}, false
	}
}
