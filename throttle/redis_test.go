package throttle_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/throttletest"
	"github.com/redis/go-redis/v9"
)

// Unit tests of throttle.RedisLimiter's client side against a fake Redis that
// answers as the scripts would. The scripts themselves are tested against
// real servers in redis_live_test.go.

var redisT0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeRedis is a RedisClient whose replies come from handle. Scripts
// whose digest is in missing answer EVALSHA with NOSCRIPT until EVAL
// loads them.
type fakeRedis struct {
	mu       sync.Mutex
	calls    []fakeCall
	missing  map[string]bool
	noscript error // the NOSCRIPT error to answer with; redis.ErrNoScript if nil
	handle   func(c fakeCall) (any, error)
}

type fakeCall struct {
	ctx  context.Context
	eval bool // EVAL, not EVALSHA
	sha  string
	keys []string
	args []any
}

// op is the operation of a slots script call, "admit" for admissions.
func (c fakeCall) op() string {
	if c.sha == throttle.RedisSlotsSHA {
		return c.args[0].(string)
	}
	return "admit"
}

func (f *fakeRedis) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	c := fakeCall{ctx: ctx, sha: sha, keys: slices.Clone(keys), args: slices.Clone(args)}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	missing, noscript, h := f.missing[sha], f.noscript, f.handle
	f.mu.Unlock()
	if missing {
		if noscript == nil {
			noscript = redis.ErrNoScript
		}
		return redis.NewCmdResult(nil, noscript)
	}
	return redis.NewCmdResult(h(c))
}

func (f *fakeRedis) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	sum := sha1.Sum([]byte(src))
	c := fakeCall{ctx: ctx, eval: true, sha: hex.EncodeToString(sum[:]), keys: slices.Clone(keys), args: slices.Clone(args)}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	delete(f.missing, c.sha)
	h := f.handle
	f.mu.Unlock()
	return redis.NewCmdResult(h(c))
}

func (f *fakeRedis) Calls() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeRedis) ops() []string {
	var ops []string
	for _, c := range f.Calls() {
		ops = append(ops, c.op())
	}
	return ops
}

// redisErr is an error reply from Redis, as go-redis returns them.
type redisErr string

func (e redisErr) Error() string { return string(e) }
func (redisErr) RedisError()     {}

// Replies of redisAdmitLua.
func admitted(used ...int64) []any {
	r := []any{int64(1), redisT0.UnixMicro(), int64(1)}
	for _, u := range used {
		r = append(r, u)
	}
	return r
}

func refused(wait time.Duration, rule int, used ...int64) []any {
	r := []any{int64(0), redisT0.UnixMicro(), int64(1), wait.Microseconds(), int64(rule)}
	for _, u := range used {
		r = append(r, u)
	}
	return r
}

func newFakeRedisLimiter(t *testing.T, f *fakeRedis, rules string, opts ...throttle.RedisOption) (*throttle.RedisLimiter, *throttletest.FakeClock) {
	t.Helper()
	clock := throttletest.NewFakeClock(redisT0)
	rs, err := throttle.ParseRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]throttle.RedisOption{throttle.WithRedisClock(clock), throttle.WithRedisJitter(0)}, opts...)
	l, err := throttle.NewRedis(f, "api", rs, opts...)
	if err != nil {
		t.Fatalf("throttle.NewRedis(%q) = %v", rules, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, clock
}

func goWait(ctx context.Context, l *throttle.RedisLimiter) <-chan error {
	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx) }()
	return done
}

// mustBlock fails if done delivers within a short real-time grace period.
func mustBlock(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned %v, want it to block", what, err)
	case <-time.After(20 * time.Millisecond):
	}
}

func mustReturn(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("call did not return")
		return nil
	}
}

func TestRedisKeysAndArguments(t *testing.T) {
	f := &fakeRedis{missing: map[string]bool{throttle.RedisAdmitSHA: true},
		handle: func(fakeCall) (any, error) { return admitted(1, 1, 1), nil }}
	l, clock := newFakeRedisLimiter(t, f, "500/m,10/s,200000/h", throttle.WithRedisMargin(5*time.Millisecond))

	wantKeys := []string{
		"pace:{api}:rules",
		"pace:{api}:r0:10/s",
		"pace:{api}:r1:500/m",
		"pace:{api}:r2:200000/h:counter",
		"pace:{api}:slots",
	}
	if got := l.Keys(); !slices.Equal(got, wantKeys) {
		t.Fatalf("Keys() = %q, want %q", got, wantKeys)
	}
	if err := l.Wait(context.Background()); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	calls := f.Calls()
	if len(calls) != 2 || calls[0].eval || !calls[1].eval {
		t.Fatalf("calls = %+v, want EVALSHA answered NOSCRIPT, then EVAL", calls)
	}
	if calls[0].sha != throttle.RedisAdmitSHA {
		t.Errorf("EVALSHA digest %s, want %s", calls[0].sha, throttle.RedisAdmitSHA)
	}
	for _, c := range calls {
		if !slices.Equal(c.keys, wantKeys[:4]) {
			t.Errorf("keys = %q, want %q", c.keys, wantKeys[:4])
		}
		want := []any{"10/s,500/m,200000/h", c.args[1], clock.Now().UnixMicro(), int64(3603522),
			10, int64(1005000), "0", 500, int64(60005000), "0", 200000, int64(3600005000), "1"}
		if fmt.Sprint(c.args) != fmt.Sprint(want) {
			t.Errorf("args = %v, want %v", c.args, want)
		}
	}
	if calls[0].args[1] != calls[1].args[1] {
		t.Errorf("member changed between EVALSHA and EVAL: %v, %v", calls[0].args[1], calls[1].args[1])
	}
	if err := l.Wait(context.Background()); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	calls = f.Calls()
	if len(calls) != 3 || calls[2].eval {
		t.Fatalf("second admission: calls = %d (last eval=%v), want one EVALSHA", len(calls), calls[len(calls)-1].eval)
	}
	if calls[2].args[1] == calls[1].args[1] {
		t.Errorf("two admissions share member %v", calls[2].args[1])
	}
	if got := l.RedisStats(); got.RoundTrips != 3 || got.ScriptLoads != 1 {
		t.Errorf("RedisStats() = %+v, want 3 round trips, 1 script load", got)
	}
}

func TestRedisSpec(t *testing.T) {
	tests := []struct {
		rules string
		opts  []throttle.RedisOption
		want  string
	}{
		{"10/s", nil, "10/s"},
		// Order does not matter: rules are stored sorted by window.
		{"500/m,10/s", nil, "10/s,500/m"},
		{"10/s,500/m", nil, "10/s,500/m"},
		{"20/s,10/s", nil, "10/s,20/s"},
		{"10/s", []throttle.RedisOption{throttle.WithGlobalJobs(4)}, "10/s global-jobs=4"},
		// A counter threshold matters only if it changes some rule's form.
		{"10/s", []throttle.RedisOption{throttle.WithRedisCounterAbove(1000)}, "10/s"},
		{"10/s", []throttle.RedisOption{throttle.WithRedisCounterAbove(0)}, "10/s counter-above=0"},
		{"", []throttle.RedisOption{throttle.WithGlobalJobs(2)}, "global-jobs=2"},
	}
	for _, tt := range tests {
		l, _ := newFakeRedisLimiter(t, &fakeRedis{}, tt.rules, tt.opts...)
		if throttle.RedisSpec(l) != tt.want {
			t.Errorf("throttle.NewRedis(%q, %d opts).spec = %q, want %q", tt.rules, len(tt.opts), throttle.RedisSpec(l), tt.want)
		}
	}
}

func TestNewRedisErrors(t *testing.T) {
	f := &fakeRedis{}
	ok := []throttle.Rule{{N: 1, Window: time.Second}}
	for _, key := range []string{"", "a{b", "a}b"} {
		if _, err := throttle.NewRedis(f, key, ok); err == nil {
			t.Errorf("throttle.NewRedis(key %q) = nil error", key)
		}
	}
	if _, err := throttle.NewRedis(f, "k", []throttle.Rule{{N: 0, Window: time.Second}}); !errors.Is(err, throttle.ErrInvalidRule) {
		t.Errorf("throttle.NewRedis(0/s) = %v, want throttle.ErrInvalidRule", err)
	}
	if _, err := throttle.NewRedis(nil, "k", ok); err == nil {
		t.Error("throttle.NewRedis(nil client) = nil error")
	}
}

func TestRedisAdmitFirstTry(t *testing.T) {
	f := &fakeRedis{handle: func(fakeCall) (any, error) { return admitted(3, 40), nil }}
	l, _ := newFakeRedisLimiter(t, f, "100/m,10/s") // Redis order: 10/s, 100/m
	if err := l.Wait(context.Background()); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	s := l.Stats()
	if s.Admitted != 1 || s.Waited != 0 || s.TotalWait != 0 {
		t.Errorf("Stats() = %+v, want 1 admitted without waiting", s)
	}
	// Used comes back in the order the rules were given.
	if s.Rules[0].Used != 40 || s.Rules[1].Used != 3 || s.Rules[0].Usage != 0.4 || s.Rules[1].Usage != 0.3 {
		t.Errorf("Stats().Rules = %+v, want 100/m used 40, 10/s used 3", s.Rules)
	}
	if s.Binding != 0 {
		t.Errorf("Stats().Binding = %d, want 0 (100/m at 40%%)", s.Binding)
	}
	if got := l.RoundTrips(); got != 1 {
		t.Errorf("RoundTrips() = %d, want 1", got)
	}
}

func TestRedisWaitSleepsWhatTheScriptSays(t *testing.T) {
	var n int
	f := &fakeRedis{handle: func(fakeCall) (any, error) {
		n++
		if n == 1 {
			return refused(150*time.Millisecond, 2, 10, 100), nil // 100/m, the second in Redis order
		}
		return admitted(10, 100), nil
	}}
	l, clock := newFakeRedisLimiter(t, f, "100/m,10/s")
	done := goWait(context.Background(), l)
	clock.BlockUntilTimers(1)
	if next, _ := clock.Next(); next.Sub(redisT0) != 150*time.Millisecond {
		t.Fatalf("sleeps until t0+%v, want t0+150ms", next.Sub(redisT0))
	}
	clock.Advance(149 * time.Millisecond)
	mustBlock(t, done, "Wait before the wait is over")
	if got := len(f.Calls()); got != 1 {
		t.Fatalf("%d calls before the wait is over, want 1", got)
	}
	clock.Advance(time.Millisecond)
	if err := mustReturn(t, done); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	s := l.Stats()
	if s.Admitted != 1 || s.Waited != 1 || s.TotalWait != 150*time.Millisecond {
		t.Errorf("Stats() = %+v, want 1 admitted after waiting 150ms", s)
	}
	if s.Rules[0].Waits != 1 || s.Rules[0].WaitTime != 150*time.Millisecond || s.Rules[1].Waits != 0 {
		t.Errorf("Stats().Rules = %+v, want the wait charged to 100/m", s.Rules)
	}
}

func TestRedisJitter(t *testing.T) {
	l, _ := newFakeRedisLimiter(t, &fakeRedis{}, "10/s", throttle.WithRedisJitter(10*time.Millisecond))
	for _, wait := range []time.Duration{0, time.Microsecond, 100 * time.Millisecond, time.Hour} {
		hi := min(wait/20, 10*time.Millisecond)
		var seen time.Duration
		for range 1000 {
			j := throttle.RedisJitter(l, wait)
			if j < 0 || j > hi {
				t.Fatalf("jitter(%v) = %v, want within [0, %v]", wait, j, hi)
			}
			seen = max(seen, j)
		}
		if hi >= time.Millisecond && seen < hi/2 {
			t.Errorf("jitter(%v) never above %v in 1000 draws, want up to %v", wait, seen, hi)
		}
	}
	l0, _ := newFakeRedisLimiter(t, &fakeRedis{}, "10/s")
	if j := throttle.RedisJitter(l0, time.Hour); j != 0 {
		t.Errorf("jitter with throttle.WithRedisJitter(0) = %v, want 0", j)
	}
}

func TestRedisNoScriptWordings(t *testing.T) {
	for _, noscript := range []error{
		redis.ErrNoScript,
		redisErr("ERR NOSCRIPT No matching script"),
		errors.New("proxy: upstream said NOSCRIPT, please use EVAL"),
	} {
		f := &fakeRedis{missing: map[string]bool{throttle.RedisAdmitSHA: true}, noscript: noscript,
			handle: func(fakeCall) (any, error) { return admitted(1), nil }}
		l, _ := newFakeRedisLimiter(t, f, "10/s")
		if err := l.Wait(context.Background()); err != nil {
			t.Errorf("NOSCRIPT as %q: Wait = %v", noscript, err)
			continue
		}
		if got := l.RedisStats(); got.RoundTrips != 2 || got.ScriptLoads != 1 {
			t.Errorf("NOSCRIPT as %q: RedisStats() = %+v, want 2 round trips, 1 load", noscript, got)
		}
	}
}

func TestRedisRuleMismatch(t *testing.T) {
	f := &fakeRedis{handle: func(fakeCall) (any, error) { return []any{int64(-1), "20/s,500/m"}, nil }}
	l, _ := newFakeRedisLimiter(t, f, "10/s")
	err := l.Wait(context.Background())
	if !errors.Is(err, throttle.ErrRuleMismatch) {
		t.Fatalf("Wait = %v, want throttle.ErrRuleMismatch", err)
	}
	for _, want := range []string{`"20/s,500/m"`, `"10/s"`, `"api"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if l.Stats().Admitted != 0 {
		t.Error("admitted despite the mismatch")
	}
}

// driveBackoff advances the fake clock to each sleep of a limiter retrying
// failed calls, checking that every sleep lies within the backoff, until
// done delivers.
func driveBackoff(t *testing.T, clock *throttletest.FakeClock, done <-chan error, deadline time.Time) error {
	t.Helper()
	backoff := throttle.RedisMinBackoff
	for {
		timers := make(chan struct{})
		go func() { clock.BlockUntilTimers(1); close(timers) }()
		select {
		case err := <-done:
			return err
		case <-timers:
		}
		next, _ := clock.Next()
		d := next.Sub(clock.Now())
		if lo := min(backoff/2, deadline.Sub(clock.Now())); d < lo || d > backoff {
			t.Fatalf("backoff sleep %v, want within [%v, %v]", d, lo, backoff)
		}
		clock.Set(next)
		backoff = min(2*backoff, throttle.RedisMaxBackoff)
	}
}

func TestRedisRetriesUntilRedisAnswers(t *testing.T) {
	var n int
	f := &fakeRedis{handle: func(fakeCall) (any, error) {
		n++
		switch n {
		case 1, 2, 3:
			return nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
		case 4:
			return nil, redisErr("LOADING Redis is loading the dataset in memory")
		}
		return admitted(1), nil
	}}
	l, clock := newFakeRedisLimiter(t, f, "10/s", throttle.WithRedisTimeout(time.Minute))
	done := goWait(context.Background(), l)
	if err := driveBackoff(t, clock, done, redisT0.Add(time.Minute)); err != nil {
		t.Fatalf("Wait = %v, want nil once Redis answers", err)
	}
	if n != 5 {
		t.Errorf("%d calls, want 5 (4 failures, then the answer)", n)
	}
	if s := l.RedisStats(); s.Failures != 4 {
		t.Errorf("RedisStats().Failures = %d, want 4", s.Failures)
	}
	if s := l.Stats(); s.Admitted != 1 || s.Rules[0].Waits != 0 {
		t.Errorf("Stats() = %+v, want 1 admission, no rule wait", s)
	}
}

func TestRedisGivesUpAfterTimeout(t *testing.T) {
	var n int
	f := &fakeRedis{handle: func(fakeCall) (any, error) {
		n++
		return nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	}}
	l, clock := newFakeRedisLimiter(t, f, "10/s", throttle.WithRedisTimeout(3*time.Second))
	done := goWait(context.Background(), l)
	err := driveBackoff(t, clock, done, redisT0.Add(3*time.Second))
	if !errors.Is(err, throttle.ErrBackend) {
		t.Fatalf("Wait = %v, want throttle.ErrBackend", err)
	}
	if !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "3s") {
		t.Errorf("error %q does not give the cause and the timeout", err)
	}
	if got := clock.Now().Sub(redisT0); got != 3*time.Second {
		t.Errorf("gave up at t0+%v, want t0+3s (a last try at the deadline)", got)
	}
	// 50ms, 100ms, ... 1.6s, then the rest: about 7 tries.
	if n < 5 || n > 10 {
		t.Errorf("%d tries in 3s, want exponential backoff (5..10)", n)
	}
	if l.Stats().Admitted != 0 {
		t.Error("admitted without Redis")
	}
}

func TestRedisPermanentErrorFailsAtOnce(t *testing.T) {
	f := &fakeRedis{handle: func(fakeCall) (any, error) {
		return nil, redisErr("WRONGPASS invalid username-password pair or user is disabled.")
	}}
	l, clock := newFakeRedisLimiter(t, f, "10/s")
	err := l.Wait(context.Background())
	if !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("Wait = %v, want throttle.ErrBackend naming WRONGPASS", err)
	}
	if len(f.Calls()) != 1 || clock.Timers() != 0 {
		t.Errorf("%d calls, %d timers: want one call and no retry", len(f.Calls()), clock.Timers())
	}
}

func TestRedisMalformedReply(t *testing.T) {
	for _, reply := range []any{"OK", []any{}, []any{int64(1)}, []any{int64(1), int64(2), int64(1)},
		[]any{int64(0), int64(2), int64(1), int64(5), int64(9), int64(1)}, []any{int64(-1), int64(3)}} {
		f := &fakeRedis{handle: func(fakeCall) (any, error) { return reply, nil }}
		l, _ := newFakeRedisLimiter(t, f, "10/s")
		if err := l.Wait(context.Background()); !errors.Is(err, throttle.ErrBackend) {
			t.Errorf("reply %v: Wait = %v, want throttle.ErrBackend", reply, err)
		}
	}
}

func TestRedisCancelWhileWaiting(t *testing.T) {
	f := &fakeRedis{handle: func(fakeCall) (any, error) { return refused(time.Hour, 1, 10), nil }}
	l, clock := newFakeRedisLimiter(t, f, "10/s")
	ctx, cancel := context.WithCancel(context.Background())
	done := goWait(ctx, l)
	clock.BlockUntilTimers(1)
	cancel()
	if err := mustReturn(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if len(f.Calls()) != 1 || l.Stats().Admitted != 0 {
		t.Errorf("%d calls, %d admitted after cancel; want 1 call, 0 admitted", len(f.Calls()), l.Stats().Admitted)
	}
}

type whoKey struct{}

// gatedRedis answers admissions only when the test says so, and tells the
// test who asked (the ctx value whoKey).
func gatedRedis() (*fakeRedis, chan string, chan []any) {
	asked := make(chan string)
	answer := make(chan []any)
	f := &fakeRedis{handle: func(c fakeCall) (any, error) {
		asked <- c.ctx.Value(whoKey{}).(string)
		return <-answer, nil
	}}
	return f, asked, answer
}

func TestRedisAdmissionIsFIFO(t *testing.T) {
	f, asked, answer := gatedRedis()
	l, _ := newFakeRedisLimiter(t, f, "10/s")
	done := map[string]<-chan error{}
	start := func(who string) {
		ctx := context.WithValue(context.Background(), whoKey{}, who)
		done[who] = goWait(ctx, l)
	}
	start("a")
	if got := <-asked; got != "a" {
		t.Fatalf("first to ask Redis: %s, want a", got)
	}
	for i, who := range []string{"b", "c", "d"} {
		start(who)
		for throttle.RedisQueued(l) != i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	for _, who := range []string{"b", "c", "d"} {
		answer <- admitted(1)
		if got := <-asked; got != who {
			t.Fatalf("next to ask Redis: %s, want %s", got, who)
		}
	}
	answer <- admitted(1)
	for who, ch := range done {
		if err := mustReturn(t, ch); err != nil {
			t.Errorf("Wait(%s) = %v", who, err)
		}
	}
}

func TestRedisCancelledWaiterDelaysNobody(t *testing.T) {
	f, asked, answer := gatedRedis()
	l, _ := newFakeRedisLimiter(t, f, "10/s")
	a := goWait(context.WithValue(context.Background(), whoKey{}, "a"), l)
	<-asked
	ctxB, cancelB := context.WithCancel(context.WithValue(context.Background(), whoKey{}, "b"))
	b := goWait(ctxB, l)
	for throttle.RedisQueued(l) != 1 {
		time.Sleep(time.Millisecond)
	}
	c := goWait(context.WithValue(context.Background(), whoKey{}, "c"), l)
	for throttle.RedisQueued(l) != 2 {
		time.Sleep(time.Millisecond)
	}
	cancelB()
	if err := mustReturn(t, b); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait(b) = %v, want context.Canceled", err)
	}
	answer <- admitted(1)
	if got := <-asked; got != "c" {
		t.Fatalf("after a: %s asked, want c", got)
	}
	answer <- admitted(2)
	for _, ch := range []<-chan error{a, c} {
		if err := mustReturn(t, ch); err != nil {
			t.Errorf("Wait = %v", err)
		}
	}
	if got := l.Stats().Admitted; got != 2 {
		t.Errorf("Admitted = %d, want 2", got)
	}
}

// slotRedis answers slot operations with take, and admits every call.
func slotRedis(take func(n int) []any) *fakeRedis {
	var n int
	return &fakeRedis{handle: func(c fakeCall) (any, error) {
		switch c.op() {
		case "take":
			n++
			return take(n), nil
		case "renew", "release":
			return []any{int64(1), redisT0.UnixMicro()}, nil
		}
		return admitted(1), nil
	}}
}

func TestRedisAcquireGlobalJobs(t *testing.T) {
	f := slotRedis(func(n int) []any {
		if n == 1 {
			return []any{int64(0), redisT0.UnixMicro(), int64(2), int64(5 * time.Second / time.Microsecond)}
		}
		return []any{int64(1), redisT0.UnixMicro(), int64(2)}
	})
	l, clock := newFakeRedisLimiter(t, f, "10/s", throttle.WithGlobalJobs(2), throttle.WithRedisLease(3*time.Second))
	type result struct {
		release func()
		err     error
	}
	done := make(chan result, 1)
	go func() {
		r, err := l.Acquire(context.Background())
		done <- result{r, err}
	}()
	clock.BlockUntilTimers(1)
	// Full: ask again after the poll interval, not the 5s until the earliest expiry.
	if next, _ := clock.Next(); next.Sub(clock.Now()) != throttle.RedisSlotPoll {
		t.Fatalf("slot poll after %v, want %v", next.Sub(clock.Now()), throttle.RedisSlotPoll)
	}
	clock.Advance(throttle.RedisSlotPoll)
	var r result
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire did not return")
	}
	if r.err != nil {
		t.Fatalf("Acquire = %v", r.err)
	}
	if got := f.ops(); !slices.Equal(got, []string{"take", "take", "admit"}) {
		t.Fatalf("ops = %q, want take, take, admit", got)
	}
	calls := f.Calls()
	if calls[0].args[1] != calls[1].args[1] || fmt.Sprint(calls[0].args[2:4]) != "[2 3000000]" {
		t.Errorf("take args %v then %v: want one lease id, cap 2, lease 3s", calls[0].args, calls[1].args)
	}
	if s := l.Stats(); s.InFlight != 1 || s.MaxInFlight != 2 || s.SlotWaits != 1 || s.SlotWaitTime != throttle.RedisSlotPoll {
		t.Errorf("Stats() = %+v, want 1 in flight of 2 after one slot wait of %v", s, throttle.RedisSlotPoll)
	}

	// The lease is renewed every lease/3 while held.
	for i := range 2 {
		clock.BlockUntilTimers(1)
		clock.Advance(time.Second)
		for len(f.Calls()) < 4+i {
			time.Sleep(time.Millisecond)
		}
	}
	r.release()
	r.release() // no effect
	if got := f.ops(); !slices.Equal(got, []string{"take", "take", "admit", "renew", "renew", "release"}) {
		t.Fatalf("ops = %q, want two renewals, then one release", got)
	}
	for _, c := range f.Calls()[3:] {
		if c.args[1] != calls[0].args[1] {
			t.Errorf("%s of lease %v, want %v", c.op(), c.args[1], calls[0].args[1])
		}
	}
	clock.Advance(time.Hour)
	time.Sleep(10 * time.Millisecond)
	if got := len(f.Calls()); got != 6 {
		t.Errorf("%d calls after release, want no more renewals", got)
	}
	if s := l.Stats(); s.InFlight != 0 || s.PeakInFlight != 1 {
		t.Errorf("Stats() = %+v, want 0 in flight, peak 1", s)
	}
}

func TestRedisAcquireCancelledGivesTheSlotBack(t *testing.T) {
	f := slotRedis(func(int) []any { return []any{int64(1), redisT0.UnixMicro(), int64(1)} })
	inner := f.handle
	f.handle = func(c fakeCall) (any, error) {
		if c.op() == "admit" {
			return refused(time.Hour, 1, 10), nil
		}
		return inner(c)
	}
	l, clock := newFakeRedisLimiter(t, f, "10/s", throttle.WithGlobalJobs(1))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx)
		done <- err
	}()
	// Timers: the lease renewal and the rate wait.
	clock.BlockUntilTimers(2)
	cancel()
	if err := mustReturn(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v, want context.Canceled", err)
	}
	if got := f.ops(); !slices.Equal(got, []string{"take", "admit", "release"}) {
		t.Fatalf("ops = %q, want take, admit, release", got)
	}
	if s := l.Stats(); s.InFlight != 0 {
		t.Errorf("InFlight = %d, want 0", s.InFlight)
	}
}

func TestRedisLeaseLost(t *testing.T) {
	f := slotRedis(func(int) []any { return []any{int64(1), redisT0.UnixMicro(), int64(1)} })
	inner := f.handle
	f.handle = func(c fakeCall) (any, error) {
		if c.op() == "renew" {
			return []any{int64(0), redisT0.UnixMicro()}, nil
		}
		return inner(c)
	}
	l, clock := newFakeRedisLimiter(t, f, "10/s", throttle.WithGlobalJobs(1), throttle.WithRedisLease(3*time.Second))
	release, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	clock.BlockUntilTimers(1)
	clock.Advance(time.Second)
	for l.RedisStats().LeasesLost != 1 {
		time.Sleep(time.Millisecond)
	}
}

func TestRedisPause(t *testing.T) {
	f := &fakeRedis{handle: func(fakeCall) (any, error) { return admitted(1), nil }}
	l, clock := newFakeRedisLimiter(t, f, "10/s")
	l.PauseUntil(redisT0.Add(2*time.Second), "429 Retry-After: 2")
	l.PauseUntil(redisT0.Add(time.Second), "shorter: ignored")
	done := goWait(context.Background(), l)
	clock.BlockUntilTimers(1)
	if len(f.Calls()) != 0 {
		t.Fatal("asked Redis during a pause")
	}
	clock.Advance(2 * time.Second)
	if err := mustReturn(t, done); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	s := l.Stats()
	if s.Pauses != 1 || s.PauseWaits != 1 || s.PausedFor != 2*time.Second || s.PauseReason != "429 Retry-After: 2" {
		t.Errorf("Stats() = %+v, want one pause of 2s with its reason", s)
	}
}

func TestRedisClose(t *testing.T) {
	f := slotRedis(func(int) []any { return []any{int64(1), redisT0.UnixMicro(), int64(1)} })
	l, clock := newFakeRedisLimiter(t, f, "10/s", throttle.WithGlobalJobs(3))
	if _, err := l.Acquire(context.Background()); err != nil { // held, not released
		t.Fatal(err)
	}
	inner := f.handle
	f.mu.Lock()
	f.handle = func(c fakeCall) (any, error) {
		if c.op() == "admit" {
			return refused(time.Hour, 1, 10), nil
		}
		return inner(c)
	}
	f.mu.Unlock()
	done := goWait(context.Background(), l)
	clock.BlockUntilTimers(2) // renewal + rate wait
	if err := l.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := mustReturn(t, done); !errors.Is(err, throttle.ErrLimiterClosed) {
		t.Errorf("pending Wait = %v, want throttle.ErrLimiterClosed", err)
	}
	if err := l.Wait(context.Background()); !errors.Is(err, throttle.ErrLimiterClosed) {
		t.Errorf("Wait after Close = %v, want throttle.ErrLimiterClosed", err)
	}
	if got := f.ops(); got[len(got)-1] != "release" {
		t.Errorf("ops = %q, want the held slot released by Close", got)
	}
}

func TestRedisNoRules(t *testing.T) {
	f := &fakeRedis{}
	l, _ := newFakeRedisLimiter(t, f, "")
	if err := l.Wait(context.Background()); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	if len(f.Calls()) != 0 {
		t.Errorf("Wait without rules made %d calls, want 0", len(f.Calls()))
	}
}

func TestParseRedisURL(t *testing.T) {
	tests := []struct {
		url     string
		addrs   []string
		user    string
		pass    string
		db      int
		tls     bool
		cluster bool
	}{
		{"redis://127.0.0.1:7000", []string{"127.0.0.1:7000"}, "", "", 0, false, false},
		{"redis://localhost", []string{"localhost:6379"}, "", "", 0, false, false},
		{"redis://:s3cret@h:1/2", []string{"h:1"}, "", "s3cret", 2, false, false},
		{"redis://bob:s3cret@h:1", []string{"h:1"}, "bob", "s3cret", 0, false, false},
		{"redis://bob:p%40ss@h:1", []string{"h:1"}, "bob", "p@ss", 0, false, false},
		{"rediss://h:6380", []string{"h:6380"}, "", "", 0, true, false},
		{"unix:///run/redis.sock?db=3", []string{"/run/redis.sock"}, "", "", 3, false, false},
		{"unix://u:pw@/run/redis.sock", []string{"/run/redis.sock"}, "u", "pw", 0, false, false},
		{"redis://a:1?addr=b:2&addr=c:3", []string{"a:1", "b:2", "c:3"}, "", "", 0, false, true},
		{"redis://a:1?cluster=true&dial_timeout=2s", []string{"a:1"}, "", "", 0, false, true},
	}
	for _, tt := range tests {
		o, err := throttle.ParseRedisURL(tt.url)
		if err != nil {
			t.Errorf("throttle.ParseRedisURL(%q) = %v", tt.url, err)
			continue
		}
		if !slices.Equal(o.Addrs, tt.addrs) || o.Username != tt.user || o.Password != tt.pass ||
			o.DB != tt.db || (o.TLSConfig != nil) != tt.tls || o.IsClusterMode != tt.cluster {
			t.Errorf("throttle.ParseRedisURL(%q) = addrs %q user %q pass %q db %d tls %v cluster %v, want %q %q %q %d %v %v",
				tt.url, o.Addrs, o.Username, o.Password, o.DB, o.TLSConfig != nil, o.IsClusterMode,
				tt.addrs, tt.user, tt.pass, tt.db, tt.tls, tt.cluster)
		}
	}
	if o, _ := throttle.ParseRedisURL("redis://a:1?dial_timeout=2s"); o == nil || o.DialTimeout != 2*time.Second {
		t.Errorf("dial_timeout=2s not applied: %+v", o)
	}

	for _, bad := range []string{
		"http://u:s3cret@h:1",
		"redis://u:s3cret@h:1/x",
		"redis://u:s3cret@h:1?bogus=1",
		"redis://u:s3cret@h:port",
		"redis://u:s3cret@h:1/2?cluster=true",
		"redis://u:s3cret@h:1?cluster=maybe",
		"unix://u:s3cret@",
		"redis://u:s3cret@[::1",
		"redis://u:s3cr/et@h:1",
		"redis://u:s3cret\x7f@h:1",
	} {
		_, err := throttle.ParseRedisURL(bad)
		if err == nil {
			t.Errorf("throttle.ParseRedisURL(%q) = nil error", bad)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "s3cr/et") {
			t.Errorf("throttle.ParseRedisURL(%q) error %q shows the password", bad, err)
		}
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"redis://h:1", "redis://h:1"},
		{"redis://bob@h:1", "redis://bob@h:1"},
		{"redis://bob:s3cret@h:1/2", "redis://bob:xxxxx@h:1/2"},
		{"redis://:s3cret@h:1", "redis://:xxxxx@h:1"},
		{"rediss://bob:s3cret@h", "rediss://bob:xxxxx@h"},
		{"unix://u:s3cret@/run/redis.sock", "unix://u:xxxxx@/run/redis.sock"},
		{"redis://u:s3c/ret@h:1", "redis://u:xxxxx@h:1"},
		{"redis://u:12#ret@h:1", "redis://u:xxxxx@h:1"},
		{"redis://u:s3cret\x7f@h:1", "redis://u:xxxxx@h:1"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := throttle.RedactURL(tt.in); got != tt.want {
			t.Errorf("throttle.RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
