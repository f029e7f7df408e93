package throttle_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/throttletest"
	"github.com/redis/go-redis/v9"
)

// Tests of RedisLimiter and its Lua scripts against real redis-server
// processes started on free loopback ports (package redistest). They check
// invariants with an independent checker (throttle.Check) and generous
// time tolerances.

func liveClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 2, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func liveLimiter(t testing.TB, c throttle.RedisClient, key, rules string, opts ...throttle.RedisOption) *throttle.RedisLimiter {
	t.Helper()
	rs, err := throttle.ParseRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	l, err := throttle.NewRedis(c, key, rs, append([]throttle.RedisOption{throttle.WithRedisTimeout(10 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// checkTimes fails t if times break any rule, and returns the results.
func checkTimes(t *testing.T, rules string, times []time.Time) []throttle.CheckResult {
	t.Helper()
	rs, _ := throttle.ParseRules(rules)
	res := throttle.Check(rs, times)
	for _, r := range res {
		if r.Violations > 0 {
			t.Errorf("rule %s: %d violations among %d admissions (peak %d in one window)",
				r.Rule, r.Violations, len(times), r.Peak)
		}
	}
	return res
}

// hammer admits total calls through the limiters, each limiter driven by
// its own goroutine, and returns the server times of the admissions.
func hammer(t *testing.T, ls []*throttle.RedisLimiter, total int) []time.Time {
	t.Helper()
	var (
		budget atomic.Int64
		mu     sync.Mutex
		times  []time.Time
		wg     sync.WaitGroup
	)
	budget.Store(int64(total))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, l := range ls {
		wg.Go(func() {
			for budget.Add(-1) >= 0 {
				at, err := throttle.RedisWaitTime(ctx, l)
				if err != nil {
					t.Errorf("Wait = %v", err)
					return
				}
				mu.Lock()
				times = append(times, at)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return times
}

func TestRedisLiveConcurrentClients(t *testing.T) {
	srv := redistest.Start(t)
	const rules = "20/200ms,50/1s"
	var ls []*throttle.RedisLimiter
	for range 8 {
		ls = append(ls, liveLimiter(t, liveClient(t, srv.Addr()), "atomic", rules))
	}
	times := hammer(t, ls, 120)
	if len(times) != 120 {
		t.Fatalf("%d admissions, want 120", len(times))
	}
	for _, r := range checkTimes(t, rules, times) {
		// Tight as well as safe: each rule was filled to its limit.
		if r.Peak != r.Rule.N {
			t.Errorf("rule %s: peak %d in one window, want %d", r.Rule, r.Peak, r.Rule.N)
		}
	}
	var trips, admitted int64
	for _, l := range ls {
		trips += l.RoundTrips()
		admitted += l.Stats().Admitted
	}
	if admitted != 120 {
		t.Errorf("Stats().Admitted sums to %d, want 120", admitted)
	}
	t.Logf("%d admissions by 8 clients, %.2f round trips per admission", admitted, float64(trips)/float64(admitted))
}

// TestRedisLiveChild is the body of the child processes of
// TestRedisLiveProcesses; it does nothing in a normal run.
func TestRedisLiveChild(t *testing.T) {
	addr := os.Getenv("PACE_REDIS_CHILD_ADDR")
	if addr == "" {
		t.Skip("helper process for TestRedisLiveProcesses")
	}
	n, _ := strconv.Atoi(os.Getenv("PACE_REDIS_CHILD_N"))
	l := liveLimiter(t, liveClient(t, addr), "processes", os.Getenv("PACE_REDIS_CHILD_RULES"))
	for range n {
		at, err := throttle.RedisWaitTime(context.Background(), l)
		if err != nil {
			t.Fatalf("Wait = %v", err)
		}
		fmt.Printf("admit %d\n", at.UnixMicro())
	}
}

func TestRedisLiveProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 processes")
	}
	srv := redistest.Start(t)
	const rules = "20/200ms,50/1s"
	const procs, each = 8, 12
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, procs)
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRedisLiveChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "PACE_REDIS_CHILD_ADDR="+srv.Addr(),
			"PACE_REDIS_CHILD_N="+strconv.Itoa(each), "PACE_REDIS_CHILD_RULES="+rules)
		cmd.Stdout = &outs[i]
		cmd.Stderr = &outs[i]
		wg.Go(func() {
			if err := cmd.Run(); err != nil {
				t.Errorf("child %d: %v\n%s", i, err, outs[i].String())
			}
		})
	}
	wg.Wait()
	var times []time.Time
	for i := range outs {
		sc := bufio.NewScanner(&outs[i])
		for sc.Scan() {
			if us, ok := strings.CutPrefix(sc.Text(), "admit "); ok {
				n, err := strconv.ParseInt(us, 10, 64)
				if err != nil {
					t.Fatalf("child %d printed %q", i, sc.Text())
				}
				times = append(times, time.UnixMicro(n))
			}
		}
	}
	if len(times) != procs*each {
		t.Fatalf("%d admissions reported, want %d", len(times), procs*each)
	}
	for _, r := range checkTimes(t, rules, times) {
		if r.Peak != r.Rule.N {
			t.Errorf("rule %s: peak %d in one window, want %d", r.Rule, r.Peak, r.Rule.N)
		}
	}
}

func TestRedisLiveCounterRules(t *testing.T) {
	srv := redistest.Start(t)
	const rules = "20/200ms,50/1s"
	var ls []*throttle.RedisLimiter
	for range 4 {
		ls = append(ls, liveLimiter(t, liveClient(t, srv.Addr()), "counter", rules, throttle.WithRedisCounterAbove(0)))
	}
	times := hammer(t, ls, 90)
	res := checkTimes(t, rules, times)
	for _, r := range res {
		// A counter may refuse up to window/1024 early, never admit more.
		if r.Peak < r.Rule.N-1 {
			t.Errorf("rule %s: peak %d in one window, want about %d", r.Rule, r.Peak, r.Rule.N)
		}
	}
	keys := ls[0].Keys()
	for _, key := range keys[1:3] {
		n, err := srv.Do("HLEN", key)
		if err != nil {
			t.Fatalf("HLEN %s: %v", key, err)
		}
		if fields, _ := strconv.Atoi(n); fields < 4 || fields > 1024+5 {
			t.Errorf("HLEN %s = %s, want buckets plus lo, hi, total, at most 1029", key, n)
		}
	}
}

func TestRedisLiveWaitIsShort(t *testing.T) {
	srv := redistest.Start(t)
	c := liveClient(t, srv.Addr())
	for _, tt := range []struct {
		name string
		opts []throttle.RedisOption
	}{{"log", nil}, {"counter", []throttle.RedisOption{throttle.WithRedisCounterAbove(0)}}} {
		l := liveLimiter(t, c, "short-"+tt.name, "3/300ms")
		var times []time.Time
		for range 4 {
			at, err := throttle.RedisWaitTime(context.Background(), l)
			if err != nil {
				t.Fatal(err)
			}
			times = append(times, at)
		}
		checkTimes(t, "3/300ms", times)
		// The fourth waits for the first to leave the window: about 300ms,
		// plus jitter (<= 10ms), one bucket (counter) and scheduling.
		if d := times[3].Sub(times[0]); d < 300*time.Millisecond || d > 600*time.Millisecond {
			t.Errorf("%s: fourth admission %v after the first, want 300ms..600ms", tt.name, d)
		}
		if s := l.Stats(); s.Admitted != 4 || s.Waited != 1 || s.Rules[0].Waits != 1 || s.Rules[0].PeakUsage != 1 {
			t.Errorf("%s: Stats() = %+v, want 4 admitted, one wait on 3/300ms, peak usage 1", tt.name, s)
		}
	}
}

func TestRedisLiveRuleMismatch(t *testing.T) {
	srv := redistest.Start(t)
	c := liveClient(t, srv.Addr())
	ctx := context.Background()
	if err := liveLimiter(t, c, "m", "10/s,100/m").Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := liveLimiter(t, c, "m", "100/m,10/s").Wait(ctx); err != nil {
		t.Errorf("same rules in another order: Wait = %v", err)
	}
	before, _ := srv.Do("ZCARD", "pace:{m}:r0:10/s")
	err := liveLimiter(t, c, "m", "20/s").Wait(ctx)
	if !errors.Is(err, throttle.ErrRuleMismatch) || !strings.Contains(err.Error(), `"10/s,100/m"`) ||
		!strings.Contains(err.Error(), `"20/s"`) {
		t.Errorf("other rules: Wait = %v, want ErrRuleMismatch naming both rule sets", err)
	}
	err = liveLimiter(t, c, "m", "10/s,100/m", throttle.WithGlobalJobs(3)).Wait(ctx)
	if !errors.Is(err, throttle.ErrRuleMismatch) {
		t.Errorf("other in-flight cap: Wait = %v, want ErrRuleMismatch", err)
	}
	if after, _ := srv.Do("ZCARD", "pace:{m}:r0:10/s"); after != before || before != "2" {
		t.Errorf("ZCARD went %s -> %s, want 2 -> 2 (refused processes record nothing)", before, after)
	}
	// Every key expires once its window has passed unused.
	for key, most := range map[string]int{"pace:{m}:rules": 60002, "pace:{m}:r0:10/s": 1001, "pace:{m}:r1:100/m": 60001} {
		ttl, err := srv.Do("PTTL", key)
		if n, _ := strconv.Atoi(ttl); err != nil || n <= 0 || n > most {
			t.Errorf("PTTL %s = %s (%v), want within (0, %d]", key, ttl, err, most)
		}
	}
}

func TestRedisLiveRestart(t *testing.T) {
	srv := redistest.Start(t)
	// The outage outlasts the longest window: a restarted server is empty.
	const rules = "5/100ms,20/500ms"
	const total = 80
	var ls []*throttle.RedisLimiter
	for range 4 {
		ls = append(ls, liveLimiter(t, liveClient(t, srv.Addr()), "restart", rules))
	}
	done := make(chan []time.Time)
	go func() { done <- hammer(t, ls, total) }()
	// Kill the server once some admissions went through.
	for {
		var n int64
		for _, l := range ls {
			n += l.Stats().Admitted
		}
		if n >= 20 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	killAt := time.Now()
	srv.Kill()
	time.Sleep(700 * time.Millisecond)
	restartAt := time.Now()
	srv.Restart()
	times := <-done
	if len(times) != total {
		t.Fatalf("%d admissions, want all %d", len(times), total)
	}
	var before, after int
	for _, at := range times {
		switch {
		case at.Before(killAt):
			before++
		case at.After(restartAt):
			after++
		default:
			t.Errorf("admission at %v while Redis was down (%v .. %v)", at, killAt, restartAt)
		}
	}
	if before < 20 || after == 0 {
		t.Errorf("%d admissions before the outage, %d after; want >= 20 and > 0", before, after)
	}
	var failures int64
	for _, l := range ls {
		failures += l.RedisStats().Failures
	}
	if failures == 0 {
		t.Error("no failed call counted during the outage")
	}
	checkTimes(t, rules, times)
}

func TestRedisLiveUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	o, err := throttle.ParseRedisURL("redis://pace:s3cret@" + addr + "?dial_timeout=200ms")
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewUniversalClient(o)
	t.Cleanup(func() { _ = c.Close() })
	l := liveLimiter(t, c, "down", "10/s", throttle.WithRedisTimeout(300*time.Millisecond), throttle.WithGlobalJobs(2))
	for name, call := range map[string]func() error{
		"Wait": func() error { return l.Wait(context.Background()) },
		"Acquire": func() error {
			_, err := l.Acquire(context.Background())
			return err
		},
	} {
		start := time.Now()
		err := call()
		elapsed := time.Since(start)
		if !errors.Is(err, throttle.ErrBackend) {
			t.Errorf("%s = %v, want ErrBackend", name, err)
			continue
		}
		if elapsed < 300*time.Millisecond || elapsed > 5*time.Second {
			t.Errorf("%s gave up after %v, want about 300ms", name, elapsed)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s error %q shows the password", name, err)
		}
	}
	if l.Stats().Admitted != 0 {
		t.Error("admitted without Redis")
	}
}

func TestRedisLiveCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	// Control: the cluster refuses a script whose keys span slots.
	if err := c.Eval(ctx, "return 1", []string{"a", "b"}).Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("EVAL on keys a, b = %v, want CROSSSLOT", err)
	}
	for _, name := range []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"} {
		l := liveLimiter(t, c, name, "5/s,100/m,200000/h", throttle.WithGlobalJobs(2))
		for range 3 {
			release, err := l.Acquire(ctx)
			if err != nil {
				t.Fatalf("quota %s: Acquire = %v", name, err)
			}
			release()
		}
	}
	// The quotas spread over the nodes, each whole on one node.
	holding := 0
	for _, s := range cl.Servers {
		keys, err := s.Do("KEYS", "pace:*")
		if err != nil {
			t.Fatal(err)
		}
		if keys == "" {
			continue
		}
		holding++
		for _, k := range strings.Split(keys, "\n") {
			tag := k[strings.Index(k, "{"):strings.Index(k, "}")]
			if !strings.Contains(keys, "pace:"+tag+"}:rules") {
				t.Errorf("key %s is not on the node of its quota's rules", k)
			}
		}
	}
	if holding < 2 {
		t.Errorf("quotas on %d node(s), want them spread over at least 2", holding)
	}
}

// skewedClock is the system clock off by a fixed amount.
type skewedClock struct{ off time.Duration }

func (c skewedClock) Now() time.Time { return time.Now().Add(c.off) }
func (c skewedClock) NewTimer(d time.Duration) throttle.Timer {
	return throttle.SystemClock().NewTimer(d)
}

func TestRedisLiveClientClockSkew(t *testing.T) {
	srv := redistest.Start(t)
	const rules = "5/200ms"
	ls := []*throttle.RedisLimiter{
		liveLimiter(t, liveClient(t, srv.Addr()), "skew", rules, throttle.WithRedisClock(skewedClock{time.Hour})),
		liveLimiter(t, liveClient(t, srv.Addr()), "skew", rules, throttle.WithRedisClock(skewedClock{-time.Hour})),
	}
	times := hammer(t, ls, 30)
	for _, r := range checkTimes(t, rules, times) {
		if r.Peak != r.Rule.N {
			t.Errorf("rule %s: peak %d, want %d", r.Rule, r.Peak, r.Rule.N)
		}
	}
	for _, at := range times {
		if d := time.Since(at); d < -5*time.Second || d > 5*time.Second {
			t.Fatalf("admission at %v, %v from now: want the server's clock, not a client's", at, -d)
		}
	}
	for _, l := range ls {
		if n := l.RedisStats().ClientTime; n != 0 {
			t.Errorf("%d decisions on the client's clock, want 0", n)
		}
	}
}

func TestRedisLiveTimeRefused(t *testing.T) {
	srv := redistest.Start(t, "--rename-command", "TIME", "")
	if _, err := srv.Do("TIME"); err == nil {
		t.Fatal("server still answers TIME")
	}
	const rules = "5/200ms"
	clock := skewedClock{time.Hour}
	l := liveLimiter(t, liveClient(t, srv.Addr()), "notime", rules, throttle.WithRedisClock(clock))
	times := hammer(t, []*throttle.RedisLimiter{l}, 12)
	checkTimes(t, rules, times)
	for _, at := range times {
		if d := clock.Now().Sub(at); d < 0 || d > 5*time.Second {
			t.Fatalf("admission at %v, want the client's clock %v", at, clock.Now())
		}
	}
	if n := l.RedisStats().ClientTime; n < 12 {
		t.Errorf("RedisStats().ClientTime = %d, want >= 12", n)
	}
}

func TestRedisLiveScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	l := liveLimiter(t, liveClient(t, srv.Addr()), "flush", "100/s")
	ctx := context.Background()
	for i := range 3 {
		if err := l.Wait(ctx); err != nil {
			t.Fatalf("Wait %d = %v", i, err)
		}
		if _, err := srv.Do("SCRIPT", "FLUSH"); err != nil {
			t.Fatal(err)
		}
	}
	// Each admission found the script gone: EVALSHA, NOSCRIPT, EVAL.
	if s := l.RedisStats(); s.ScriptLoads != 3 || s.RoundTrips != 6 {
		t.Errorf("RedisStats() = %+v, want 3 loads in 6 round trips", s)
	}
	if err := l.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := l.RoundTrips(); got != 8 {
		t.Errorf("RoundTrips() = %d, want 8", got)
	}
	if err := l.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := l.RoundTrips(); got != 9 {
		t.Errorf("RoundTrips() = %d after the script is loaded again, want 9: one per admission", got)
	}
}

func TestRedisLiveLeases(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	lease := throttle.WithRedisLease(300 * time.Millisecond)
	// A holds a slot and never renews it: its clock never moves, as if it
	// had hung or died.
	stuck := liveLimiter(t, liveClient(t, srv.Addr()), "lease", "1000/s", throttle.WithGlobalJobs(1), lease,
		throttle.WithRedisClock(throttletest.NewFakeClock(time.Now())))
	if _, err := stuck.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	b := liveLimiter(t, liveClient(t, srv.Addr()), "lease", "1000/s", throttle.WithGlobalJobs(1), lease)
	start := time.Now()
	release, err := b.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 3*time.Second {
		t.Errorf("got the slot after %v, want it once the stuck lease expired (~300ms)", d)
	}
	// B renews its lease while it holds it: C cannot take the slot.
	c := liveLimiter(t, liveClient(t, srv.Addr()), "lease", "1000/s", throttle.WithGlobalJobs(1), lease)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := c.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire while the slot is held and renewed = %v, want DeadlineExceeded", err)
	}
	release()
	start = time.Now()
	if _, err := c.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("got a released slot after %v, want at once", d)
	}
	if s := c.Stats(); s.InFlight != 1 || s.SlotWaits != 1 {
		t.Errorf("Stats() = %+v, want 1 in flight after 1 slot wait", s)
	}
}

func TestRedisLiveGlobalJobsCap(t *testing.T) {
	srv := redistest.Start(t)
	const jobs = 2
	var running, peak atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	for range 3 {
		l := liveLimiter(t, liveClient(t, srv.Addr()), "cap", "1000/s", throttle.WithGlobalJobs(jobs))
		for range 2 {
			wg.Go(func() {
				for range 5 {
					release, err := l.Acquire(ctx)
					if err != nil {
						t.Errorf("Acquire = %v", err)
						return
					}
					n := running.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					time.Sleep(10 * time.Millisecond)
					running.Add(-1)
					release()
				}
			})
		}
	}
	wg.Wait()
	if p := peak.Load(); p != jobs {
		t.Errorf("peak %d calls in flight, want %d (the cap, reached)", p, jobs)
	}
	if n, _ := srv.Do("ZCARD", "pace:{cap}:slots"); n != "0" {
		t.Errorf("%s leases left after every release, want 0", n)
	}
}

func benchmarkRedis(b *testing.B, rules string, limiters, goroutines int) {
	srv := redistest.Start(b)
	var ls []*throttle.RedisLimiter
	for range limiters {
		ls = append(ls, liveLimiter(b, liveClient(b, srv.Addr()), "bench", rules))
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		l := ls[g%len(ls)]
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := l.Wait(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	var trips, admitted int64
	for _, l := range ls {
		trips += l.RoundTrips()
		admitted += l.Stats().Admitted
	}
	b.ReportMetric(float64(trips)/float64(admitted), "roundtrips/admission")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admissions/s")
}

func BenchmarkRedisAdmit(b *testing.B) {
	redistest.Require(b, "redis-server")
	for _, bm := range []struct {
		name                 string
		rules                string
		limiters, goroutines int
	}{
		{"log/1", "100000/ms", 1, 1},
		{"log/4-shared", "100000/ms", 1, 4},
		{"log/4-limiters", "100000/ms", 4, 4},
		{"counter/1", "1000000000/s", 1, 1},
		{"counter/4-limiters", "1000000000/s", 4, 4},
		{"log+counter/1", "100000/ms,1000000000/h", 1, 1},
	} {
		b.Run(bm.name, func(b *testing.B) { benchmarkRedis(b, bm.rules, bm.limiters, bm.goroutines) })
	}
}

func TestRedisLiveCounterForgets(t *testing.T) {
	srv := redistest.Start(t)
	l := liveLimiter(t, liveClient(t, srv.Addr()), "forget", "2/100ms", throttle.WithRedisCounterAbove(0))
	ctx := context.Background()
	for range 2 {
		if err := l.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(250 * time.Millisecond) // the buckets no longer overlap the window
	start := time.Now()
	if err := l.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 50*time.Millisecond || l.Stats().Waited != 0 {
		t.Errorf("third call waited %v (Waited %d), want no wait", d, l.Stats().Waited)
	}
	key := l.Keys()[1]
	fields, err := srv.Do("HKEYS", key)
	if err != nil {
		t.Fatal(err)
	}
	// lo, hi, total and the bucket of the third call.
	if n := len(strings.Split(fields, "\n")); n != 4 {
		t.Errorf("HKEYS %s = %q, want the old buckets deleted", key, fields)
	}
	if total, _ := srv.Do("HGET", key, "total"); total != "1" {
		t.Errorf("total = %s, want 1", total)
	}
}
