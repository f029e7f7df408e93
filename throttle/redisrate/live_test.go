package redisrate_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// Tests of the limiter and its Lua scripts against real redis-server
// processes started on free loopback ports (package redistest): skipped
// when redis-server is missing, failed under CI=true. They check
// invariants with the independent oracle throttle.Check on the admission
// instants, which are server times, with generous time tolerances. They
// run in parallel, each against its own server.

func liveClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	// One dial per attempt, and a pool large enough that the dial failures
	// of a short outage do not trip go-redis's dial circuit breaker (which
	// then probes only once a second).
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 8, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func mustRules(t testing.TB, spec string) []throttle.Rule {
	t.Helper()
	rs, err := throttle.ParseRules(spec)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// liveOpen opens a limiter on c for quota key keeping spec, with o's other
// options (Timeout 10s unless set), closed when the test ends.
func liveOpen(t testing.TB, c redisrate.Client, key, spec string, o redisrate.Options) *redisrate.Limiter {
	t.Helper()
	o.Key, o.Rules = key, mustRules(t, spec)
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	l, err := redisrate.Open(context.Background(), c, o)
	if err != nil {
		t.Fatalf("Open(%q, %q) = %v", key, spec, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// checkCalls fails t if calls break any rule of spec, and returns the
// results.
func checkCalls(t *testing.T, spec string, calls []throttle.Call) []throttle.CheckResult {
	t.Helper()
	res := throttle.Check(mustRules(t, spec), calls)
	for _, r := range res {
		if r.Violations > 0 {
			t.Errorf("rule %s: %d violations among %d admissions (peak %d in one window)",
				r.Rule, r.Violations, len(calls), r.Peak)
		}
	}
	return res
}

// checkTight fails t unless every rule was filled to its limit in some
// window: the limiter is tight as well as safe.
func checkTight(t *testing.T, res []throttle.CheckResult) {
	t.Helper()
	for _, r := range res {
		if r.Peak != r.Rule.N {
			t.Errorf("rule %s: peak %d in one window, want %d", r.Rule, r.Peak, r.Rule.N)
		}
	}
}

// hammer admits total calls through the limiters, each driven by per
// goroutines, each call costing cost() (1 if cost is nil), and returns the
// admissions as the server recorded them. Slots are released at once.
func hammer(t *testing.T, ls []*redisrate.Limiter, per, total int, cost func() int) []throttle.Call {
	t.Helper()
	var (
		budget atomic.Int64
		mu     sync.Mutex
		calls  []throttle.Call
		wg     sync.WaitGroup
	)
	budget.Store(int64(total))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, l := range ls {
		for range per {
			wg.Go(func() {
				for budget.Add(-1) >= 0 {
					c := 1
					if cost != nil {
						c = cost()
					}
					a, err := l.Admit(ctx, c)
					if err != nil {
						t.Errorf("Admit(ctx, %d) = %v", c, err)
						return
					}
					a.Release()
					mu.Lock()
					calls = append(calls, throttle.Call{At: a.At, Cost: a.Cost})
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return calls
}

// admitted sums Stats().Admitted and the round trips over ls.
func totals(ls []*redisrate.Limiter) (admitted, trips int64) {
	for _, l := range ls {
		s := l.Stats()
		admitted += s.Admitted
		trips += s.Store.RoundTrips
	}
	return admitted, trips
}

// waitFor polls cond until it holds, failing t after timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after %v for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// do sends a command to srv, failing t on error.
func do(t *testing.T, srv *redistest.Server, args ...string) string {
	t.Helper()
	r, err := srv.Do(args...)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return r
}

// scriptOf names a script by digest: "admit", "slots" or "correct".
func scriptOf(sha string) string {
	switch sha {
	case redisrate.AdmitSHA:
		return "admit"
	case redisrate.SlotsSHA:
		return "slots"
	case redisrate.CorrectSHA:
		return "correct"
	case redisrate.RepairSHA:
		return "repair"
	}
	return ""
}

func digest(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}

// skewedClient is the client of a process whose clock is off by skew: the
// only instant the limiter sends Redis is its own clock in the scripts'
// arguments (used only when TIME is refused), so it shifts that.
type skewedClient struct {
	redisrate.Client
	skew time.Duration
}

func (c skewedClient) shift(sha string, args []any) []any {
	i := map[string]int{"admit": 2, "slots": 4, "correct": 4, "repair": 1}[scriptOf(sha)]
	args = slices.Clone(args)
	args[i] = args[i].(int64) + c.skew.Microseconds()
	return args
}

func (c skewedClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return c.Client.EvalSha(ctx, sha, keys, c.shift(sha, args)...)
}

func (c skewedClient) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	return c.Client.Eval(ctx, src, keys, c.shift(digest(src), args)...)
}

// freezable is a client that stops reaching Redis while frozen, as a
// process that hangs.
type freezable struct {
	redisrate.Client
	frozen atomic.Bool
}

var errFrozen = errors.New("frozen")

func (c *freezable) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if c.frozen.Load() {
		return redis.NewCmdResult(nil, errFrozen)
	}
	return c.Client.EvalSha(ctx, sha, keys, args...)
}

func (c *freezable) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	if c.frozen.Load() {
		return redis.NewCmdResult(nil, errFrozen)
	}
	return c.Client.Eval(ctx, src, keys, args...)
}

func TestLiveConcurrentClients(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const rules = "10/100ms,25/500ms"
	var ls []*redisrate.Limiter
	var lost atomic.Int64 // no loss is ever reported where Redis keeps everything
	for range 8 {
		ls = append(ls, liveOpen(t, liveClient(t, srv.Addr()), "atomic", rules,
			redisrate.Options{OnLoss: func(redisrate.Loss) { lost.Add(1) }}))
	}
	calls := hammer(t, ls, 1, 60, nil)
	if n := lost.Load(); n != 0 {
		t.Errorf("OnLoss called %d times, want never: Redis lost nothing", n)
	}
	if len(calls) != 60 {
		t.Fatalf("%d admissions, want 60", len(calls))
	}
	checkTight(t, checkCalls(t, rules, calls))
	admitted, trips := totals(ls)
	if admitted != 60 {
		t.Errorf("Stats().Admitted sums to %d, want 60", admitted)
	}
	t.Logf("60 admissions by 8 clients, %.2f round trips per admission", float64(trips)/float64(admitted))
}

// TestLiveChild is the body of the child processes of
// TestLiveProcesses; it does nothing in a normal run.
func TestLiveChild(t *testing.T) {
	addr := os.Getenv("PACE_REDISRATE_CHILD_ADDR")
	if addr == "" {
		t.Skip("helper process for TestLiveProcesses")
	}
	n, _ := strconv.Atoi(os.Getenv("PACE_REDISRATE_CHILD_N"))
	l := liveOpen(t, liveClient(t, addr), "processes", os.Getenv("PACE_REDISRATE_CHILD_RULES"), redisrate.Options{})
	for range n {
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatalf("Admit = %v", err)
		}
		a.Release()
		fmt.Printf("admit %d\n", a.At.UnixMicro())
	}
}

func TestLiveProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 processes")
	}
	t.Parallel()
	srv := redistest.Start(t)
	const rules = "10/100ms,25/500ms"
	const procs, each = 4, 15
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, procs)
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLiveChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "PACE_REDISRATE_CHILD_ADDR="+srv.Addr(),
			"PACE_REDISRATE_CHILD_N="+strconv.Itoa(each), "PACE_REDISRATE_CHILD_RULES="+rules)
		cmd.Stdout = &outs[i]
		cmd.Stderr = &outs[i]
		wg.Go(func() {
			if err := cmd.Run(); err != nil {
				t.Errorf("child %d: %v\n%s", i, err, outs[i].String())
			}
		})
	}
	wg.Wait()
	var calls []throttle.Call
	for i := range outs {
		sc := bufio.NewScanner(&outs[i])
		for sc.Scan() {
			if us, ok := strings.CutPrefix(sc.Text(), "admit "); ok {
				n, err := strconv.ParseInt(us, 10, 64)
				if err != nil {
					t.Fatalf("child %d printed %q", i, sc.Text())
				}
				calls = append(calls, throttle.Call{At: time.UnixMicro(n), Cost: 1})
			}
		}
	}
	if len(calls) != procs*each {
		t.Fatalf("%d admissions reported, want %d", len(calls), procs*each)
	}
	checkTight(t, checkCalls(t, rules, calls))
}

func TestLiveCounterRules(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const rules = "10/100ms,25/500ms"
	var ls []*redisrate.Limiter
	for range 4 {
		ls = append(ls, liveOpen(t, liveClient(t, srv.Addr()), "counter", rules, redisrate.Options{CounterAbove: -1}))
	}
	calls := hammer(t, ls, 1, 60, nil)
	for _, r := range checkCalls(t, rules, calls) {
		// A counter may refuse up to window/1024 early, never admit more.
		if r.Peak < r.Rule.N-1 {
			t.Errorf("rule %s: peak %d in one window, want about %d", r.Rule, r.Peak, r.Rule.N)
		}
	}
	keys := ls[0].Keys()
	for _, key := range []string{keys[1], keys[3]} {
		n, _ := strconv.Atoi(do(t, srv, "HLEN", key))
		if n < 4 || n > 1024+5 {
			t.Errorf("HLEN %s = %d, want buckets plus lo, hi, total, at most 1029", key, n)
		}
	}
}

func TestLiveWaitIsShort(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := liveClient(t, srv.Addr())
	const rules = "3/300ms"
	for _, tt := range []struct {
		name string
		o    redisrate.Options
	}{{"log", redisrate.Options{}}, {"counter", redisrate.Options{CounterAbove: -1}}} {
		l := liveOpen(t, c, "short-"+tt.name, rules, tt.o)
		var calls []throttle.Call
		for range 4 {
			a, err := l.Admit(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			calls = append(calls, throttle.Call{At: a.At, Cost: 1})
		}
		checkCalls(t, rules, calls)
		// The fourth waits for the first to leave the window: 300ms, plus
		// jitter (<= 10ms), one bucket (counter) and scheduling.
		if d := calls[3].At.Sub(calls[0].At); d > 300*time.Millisecond+time.Second {
			t.Errorf("%s: fourth admission %v after the first, want about 300ms", tt.name, d)
		}
		if s := l.Stats(); s.Admitted != 4 || s.Waits != 1 || s.Rules[0].Waits != 1 || s.Rules[0].PeakUsage != 1 {
			t.Errorf("%s: Stats() = %+v, want 4 admitted, one wait on 3/300ms, peak usage 1", tt.name, s)
		}
	}
}

func TestLiveRuleMismatch(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := liveClient(t, srv.Addr())
	ctx := context.Background()
	if _, err := liveOpen(t, c, "m", "10/s,100/m", redisrate.Options{}).Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := liveOpen(t, c, "m", "100/m,10/s", redisrate.Options{}).Admit(ctx, 1); err != nil {
		t.Errorf("same rules in another order: Admit = %v", err)
	}
	for _, tt := range []struct {
		rules string
		o     redisrate.Options
	}{
		{"20/s", redisrate.Options{}},
		{"10/s,100/m", redisrate.Options{GlobalJobs: 3}},
		{"10/s,100/m", redisrate.Options{CounterAbove: -1}},
		{"10/s,cost:100/m", redisrate.Options{}},
	} {
		o := tt.o
		o.Key, o.Rules = "m", mustRules(t, tt.rules)
		_, err := redisrate.Open(ctx, c, o)
		if !errors.As(err, new(*throttle.MismatchError)) || !strings.Contains(err.Error(), `"10/s,100/m"`) {
			t.Errorf("Open(%q, %+v) = %v, want a *throttle.MismatchError naming the stored rules", tt.rules, tt.o, err)
		}
	}
	if n := do(t, srv, "ZCARD", "pace:{m}:r0:10/s"); n != "2" {
		t.Errorf("ZCARD = %s, want 2 (refused processes record nothing)", n)
	}
	// Every key expires once its window has passed unused.
	for key, most := range map[string]int{"pace:{m}:rules": 60002, "pace:{m}:r0:10/s": 1001, "pace:{m}:r1:100/m": 60001} {
		ttl := do(t, srv, "PTTL", key)
		if n, _ := strconv.Atoi(ttl); n <= 0 || n > most {
			t.Errorf("PTTL %s = %s, want within (0, %d]", key, ttl, most)
		}
	}

	// A process with other rules slips in between Open and the first
	// admission: the admission is refused, and records nothing.
	late := liveOpen(t, c, "m2", "5/s", redisrate.Options{})
	if _, err := liveOpen(t, c, "m2", "7/s", redisrate.Options{}).Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	_, err := late.Admit(ctx, 1)
	if !errors.As(err, new(*throttle.MismatchError)) || !strings.Contains(err.Error(), `"7/s"`) || !strings.Contains(err.Error(), `"5/s"`) {
		t.Errorf("Admit after another process took the quota = %v, want a *throttle.MismatchError naming both rule sets", err)
	}
	if n := do(t, srv, "ZCARD", "pace:{m2}:r0:5/s"); n != "0" {
		t.Errorf("ZCARD = %s, want 0", n)
	}
}

func TestLiveRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// The outage outlasts the longest window: a restarted server is empty.
	const rules = "5/100ms,20/500ms"
	const total = 40
	var ls []*redisrate.Limiter
	heard := make([]outages, 4)
	for i := range 4 {
		ls = append(ls, liveOpen(t, liveClient(t, srv.Addr()), "restart", rules, redisrate.Options{OnOutage: heard[i].report}))
	}
	done := make(chan []throttle.Call)
	go func() { done <- hammer(t, ls, 1, total, nil) }()
	waitFor(t, "20 admissions", 10*time.Second, func() bool {
		n, _ := totals(ls)
		return n >= 20
	})
	killAt := time.Now()
	srv.Kill()
	time.Sleep(600 * time.Millisecond)
	restartAt := time.Now()
	srv.Restart()
	calls := <-done
	if len(calls) != total {
		t.Fatalf("%d admissions, want all %d", len(calls), total)
	}
	var before, after int
	for _, c := range calls {
		switch {
		case c.At.Before(killAt):
			before++
		case c.At.After(restartAt):
			after++
		default:
			t.Errorf("admission at %v while Redis was down (%v .. %v)", c.At, killAt, restartAt)
		}
	}
	if before < 20 || after == 0 {
		t.Errorf("%d admissions before the outage, %d after; want >= 20 and > 0", before, after)
	}
	checkCalls(t, rules, calls)
	for i, l := range ls {
		if f := l.Stats().Store.Failures; f == 0 {
			t.Errorf("limiter %d: no failed call counted during the outage", i)
		}
		// Down and up alternate, starting down and ending up.
		seen := heard[i].get()
		ok := len(seen) >= 2 && len(seen)%2 == 0
		for j, o := range seen {
			ok = ok && o.Down == (j%2 == 0)
		}
		if !ok {
			t.Errorf("limiter %d: OnOutage heard %+v, want down, up (alternating)", i, seen)
		}
	}
}

func TestLiveUnreachable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	one := mustRules(t, "10/s")
	closed := redistest.DeadAddr(t)
	// Nothing listens: no outage to wait out, an error at once (long
	// before the timeout) that says so.
	start := time.Now()
	_, err := redisrate.Dial(ctx, "redis://:s3cret@"+closed+"?dial_timeout=200ms", redisrate.Options{Rules: one, Timeout: time.Minute})
	if !errors.Is(err, throttle.ErrBackend) || strings.Contains(err.Error(), "s3cret") ||
		!strings.Contains(err.Error(), "connection refused: no Redis listens at "+closed) {
		t.Errorf("Dial(nothing listening) = %v, want ErrBackend saying no Redis listens there, without the password", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Dial(nothing listening) gave up after %v, want at once, not after the 1m timeout", d)
	}

	// redistest waits for PING, so the password is set once it answers.
	srv := redistest.Start(t)
	do(t, srv, "CONFIG", "SET", "requirepass", "s3cret")
	start = time.Now()
	_, err = redisrate.Dial(ctx, "redis://:wrong@"+srv.Addr(), redisrate.Options{Rules: one})
	if !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Errorf("Dial with a wrong password = %v, want ErrBackend naming WRONGPASS", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Dial with a wrong password took %v, want no retry until the 30s timeout", d)
	}

	// Redis goes away under a limiter: admissions and slots give up after
	// the timeout.
	l, err := redisrate.Dial(ctx, "redis://:s3cret@"+srv.Addr()+"?dial_timeout=200ms",
		redisrate.Options{Key: "down", Rules: one, Timeout: 300 * time.Millisecond, GlobalJobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := l.Admit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	srv.Kill()
	start = time.Now()
	_, err = l.Admit(ctx, 1)
	if !errors.Is(err, throttle.ErrBackend) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Admit with Redis gone = %v, want ErrBackend without the password", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("Admit gave up after %v, want after the 300ms timeout", d)
	}
	if s := l.Stats(); s.Admitted != 1 || s.InFlight != 0 {
		t.Errorf("Stats() = %+v, want only the admission made while Redis was up", s)
	}
}

func TestLiveCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	// Control: the cluster refuses a script whose keys span slots.
	if err := c.Eval(ctx, "return 1", []string{"a", "b"}).Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("EVAL on keys a, b = %v, want CROSSSLOT", err)
	}
	for _, name := range []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"} {
		l := liveOpen(t, c, name, "5/s,cost:50/s,100/m,200000/h", redisrate.Options{GlobalJobs: 2})
		for range 3 {
			a, err := l.Admit(ctx, 3)
			if err != nil {
				t.Fatalf("quota %s: Admit = %v", name, err)
			}
			if err := a.Correct(context.Background(), 4); err != nil {
				t.Fatalf("quota %s: Correct = %v", name, err)
			}
			a.Release()
		}
		if s := l.Stats(); s.Rules[1].Used != 12 {
			t.Errorf("quota %s: cost:50/s holds %d, want 12", name, s.Rules[1].Used)
		}
	}
	// The quotas spread over the nodes, each whole on one node.
	holding := 0
	for _, s := range cl.Servers {
		keys := do(t, s, "KEYS", "pace:*")
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

// A URL that names one node of a Redis Cluster, without cluster=true,
// reaches the quota only if its keys are on that node; on the others
// every call is answered MOVED, which only a cluster client follows. That
// is the URL's fault, which no wait cures: pace waited out the timeout
// (30s by default) without a word, then said Redis did not answer. Now it
// fails at once and says what to add.
func TestLiveClusterNodeURL(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	refused := 0
	for _, addr := range cl.Addrs() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		start := time.Now()
		l, err := redisrate.Dial(ctx, "redis://"+addr, redisrate.Options{Key: "alpha", Rules: mustRules(t, "5/s"), Timeout: 10 * time.Second})
		if err == nil {
			_, err = l.Admit(ctx, 1)
			l.Close()
		}
		cancel()
		if err == nil {
			continue // the quota's node
		}
		refused++
		if !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), "MOVED") || !strings.Contains(err.Error(), "cluster=true") {
			t.Errorf("node %s: %v; want ErrBackend, MOVED and a hint at cluster=true", addr, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("node %s: failed after %v, want at once, not after the 10s timeout", addr, d)
		}
	}
	if refused != len(cl.Servers)-1 {
		t.Errorf("%d of %d nodes refused the quota, want all but its own", refused, len(cl.Servers))
	}
}

// Clients whose clocks are an hour apart share a quota exactly: every
// decision is taken on the server's clock. (The limiter sends its own
// clock only for servers that refuse TIME; skewedClient shifts it.)
func TestLiveClientClockSkew(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const rules = "5/200ms"
	o := redisrate.Options{GlobalJobs: 4}
	ls := []*redisrate.Limiter{
		liveOpen(t, skewedClient{liveClient(t, srv.Addr()), time.Hour}, "skew", rules, o),
		liveOpen(t, skewedClient{liveClient(t, srv.Addr()), -time.Hour}, "skew", rules, o),
	}
	calls := hammer(t, ls, 2, 15, nil)
	checkTight(t, checkCalls(t, rules, calls))
	for _, c := range calls {
		if d := time.Since(c.At); d < -5*time.Second || d > 5*time.Second {
			t.Fatalf("admission at %v, %v from now: want the server's clock, not a client's", c.At, -d)
		}
	}
	for i, l := range ls {
		if n := l.Stats().Store.ClientTime; n != 0 {
			t.Errorf("limiter %d: %d decisions on the client's clock, want 0", i, n)
		}
	}
}

// A server that refuses TIME in scripts: decisions fall back on the
// client's clock, and say so.
func TestLiveTimeRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--rename-command", "TIME", "")
	if _, err := srv.Do("TIME"); err == nil {
		t.Fatal("server still answers TIME")
	}
	const rules = "5/200ms"
	const skew = time.Hour
	o := redisrate.WithSlotPoll(redisrate.Options{GlobalJobs: 1}, 10*time.Millisecond)
	l := liveOpen(t, skewedClient{liveClient(t, srv.Addr()), skew}, "notime", rules, o)
	calls := hammer(t, []*redisrate.Limiter{l}, 2, 12, nil)
	checkCalls(t, rules, calls)
	for _, c := range calls {
		if d := time.Now().Add(skew).Sub(c.At); d < 0 || d > 5*time.Second {
			t.Fatalf("admission at %v, want the client's clock %v", c.At, time.Now().Add(skew))
		}
	}
	if n := l.Stats().Store.ClientTime; n < 12 {
		t.Errorf("Stats().Store.ClientTime = %d, want >= 12", n)
	}
}

func TestLiveScriptFlush(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	l := liveOpen(t, liveClient(t, srv.Addr()), "flush", "100/s", redisrate.Options{})
	ctx := context.Background()
	for i := range 3 {
		if _, err := l.Admit(ctx, 1); err != nil {
			t.Fatalf("Admit %d = %v", i, err)
		}
		do(t, srv, "SCRIPT", "FLUSH")
	}
	// Each admission found the script gone: EVALSHA, NOSCRIPT, EVAL.
	if s, loads := l.Stats().Store, redisrate.ScriptLoads(l); loads != 3 || s.RoundTrips != 6 || s.Failures != 0 {
		t.Errorf("Stats().Store = %+v, %d script loads; want 3 loads in 6 round trips, no failure", s, loads)
	}
	if _, err := l.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := l.Stats().Store.RoundTrips; got != 8 {
		t.Errorf("RoundTrips = %d, want 8", got)
	}
	if _, err := l.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := l.Stats().Store.RoundTrips; got != 9 {
		t.Errorf("RoundTrips = %d after the script is loaded again, want 9: one per admission", got)
	}
}

func TestLiveLeases(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	o := redisrate.Options{GlobalJobs: 1, Lease: redisrate.MinLease}
	// stuck holds the slot, then hangs: it no longer reaches Redis to
	// renew its lease.
	frozen := &freezable{Client: liveClient(t, srv.Addr())}
	stuck := liveOpen(t, frozen, "lease", "1000/s", o)
	held, err := stuck.Admit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	frozen.frozen.Store(true)
	b := liveOpen(t, liveClient(t, srv.Addr()), "lease", "1000/s", o)
	bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, err := b.Admit(bctx, 1)
	if err != nil {
		t.Fatalf("Admit once the stuck lease expires = %v", err)
	}
	// The stuck lease was taken before its admission and ran MinLease.
	if d := got.At.Sub(held.At); d < redisrate.MinLease/2 {
		t.Errorf("got the slot %v after the stuck holder, want once its %v lease expired", d, redisrate.MinLease)
	}
	if s := b.Stats(); s.SlotWaits != 1 {
		t.Errorf("Stats() = %+v, want one slot wait", s)
	}
	if s := stuck.Stats().Store; s.Failures == 0 {
		t.Errorf("stuck: Stats().Store = %+v, want its failed renewals counted", s)
	}

	// b renews its lease while it holds it: c cannot take the slot.
	c := liveOpen(t, liveClient(t, srv.Addr()), "lease", "1000/s", o)
	short, cancel := context.WithTimeout(ctx, redisrate.MinLease*7/3)
	defer cancel()
	if _, err := c.Admit(short, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Admit while the slot is held and renewed = %v, want DeadlineExceeded", err)
	}
	got.Release()
	if _, err := c.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Taken at the first try: no slot wait.
	if s := c.Stats(); s.InFlight != 1 || s.SlotWaits != 0 {
		t.Errorf("Stats() = %+v, want 1 in flight, no slot wait", s)
	}
}

// TestLiveRenewalAfterRelease: a renewal that reaches Redis after its
// lease was released (its caller gave up waiting for the answer; the job
// ended, or Close came, and released the slot meanwhile) does not take
// the slot again for a holder that no longer wants it: another process
// gets it at once, not once a lease has run out.
func TestLiveRenewalAfterRelease(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	c := liveClient(t, srv.Addr())
	o := redisrate.Options{GlobalJobs: 1}
	const key = "pace:{late}:slots"
	a := liveOpen(t, c, "late", "1000/s", o)
	got, err := a.Admit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	id := do(t, srv, "ZRANGE", key, "0", "0")
	got.Release()
	reply, err := c.EvalSha(ctx, redisrate.SlotsSHA, []string{key}, "renew", id, 1, redisrate.DefaultLease.Microseconds(), time.Now().UnixMicro()).Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(reply) == 0 || reply[0] != int64(3) {
		t.Errorf("a renewal after the release = %v, want {3, now}: released, not taken again", reply)
	}
	if n := do(t, srv, "ZCOUNT", key, "0", "+inf"); n != "0" {
		t.Errorf("%s slots held after the release and the late renewal, want 0", n)
	}
	b := liveOpen(t, liveClient(t, srv.Addr()), "late", "1000/s", o)
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := b.Admit(short, 1); err != nil {
		t.Fatalf("Admit by another process = %v, want the slot at once", err)
	}
	if s := b.Stats(); s.SlotWaits != 0 {
		t.Errorf("Stats() = %+v, want no slot wait", s)
	}
	// The mark of the release is not a slot: the cap of 1 is b's, and a
	// second holder waits.
	short2, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	if _, err := a.Admit(short2, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Admit while b holds the only slot = %v, want DeadlineExceeded", err)
	}
}

// TestLiveACLDocumented: a Redis user allowed only what docs/redis.md
// lists (EVALSHA, EVAL and GET on pace:*, and the commands the scripts
// run there) can admit, correct, hold and release fleet-wide slots,
// inspect and reset a quota.
func TestLiveACLDocumented(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--user", "pacer", "on", ">acl-test-pw", "~pace:*", "+@connection",
		"+evalsha", "+eval", "+get", "+time", "+set", "+pexpire", "+del", "+exists", "+incrby", "+@sortedset", "+@hash")
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "pacer", Password: "acl-test-pw"})
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	l := liveOpen(t, c, "acl", "5/s,cost:100/m", redisrate.Options{GlobalJobs: 2})
	for range 3 {
		a, err := l.Admit(ctx, 3)
		if err != nil {
			t.Fatalf("Admit as a user allowed the documented commands = %v", err)
		}
		if err := a.Correct(ctx, 4); err != nil {
			t.Fatalf("Correct = %v", err)
		}
		a.Release()
	}
	if _, err := redisrate.Inspect(ctx, c, "acl"); err != nil {
		t.Errorf("Inspect = %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if s := l.Stats().Store; s.Failures != 0 {
		t.Errorf("Stats().Store = %+v, want no failed calls", s)
	}
	if n := do(t, srv, "ZCOUNT", "pace:{acl}:slots", "0", "+inf"); n != "0" {
		t.Errorf("%s slots held after every release, want 0", n)
	}
	if err := redisrate.Reset(ctx, c, "acl"); err != nil {
		t.Errorf("Reset = %v", err)
	}
}

func TestLiveGlobalJobsCap(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const jobs = 2
	var running, peak atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	o := redisrate.WithSlotPoll(redisrate.Options{GlobalJobs: jobs}, 10*time.Millisecond)
	for range 3 {
		l := liveOpen(t, liveClient(t, srv.Addr()), "cap", "1000/s", o)
		for range 2 {
			wg.Go(func() {
				for range 5 {
					a, err := l.Admit(ctx, 1)
					if err != nil {
						t.Errorf("Admit = %v", err)
						return
					}
					n := running.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					time.Sleep(10 * time.Millisecond) // the call
					running.Add(-1)
					a.Release()
				}
			})
		}
	}
	wg.Wait()
	if p := peak.Load(); p != jobs {
		t.Errorf("peak %d calls in flight, want %d (the cap, reached)", p, jobs)
	}
	if n := do(t, srv, "ZCOUNT", "pace:{cap}:slots", "0", "+inf"); n != "0" {
		t.Errorf("%s leases left after every release, want 0", n)
	}
}

func TestLiveCounterForgets(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	// The key expires a window after its last call: on a machine so
	// loaded that the check came later than that, the run says nothing,
	// and is made again.
	for try := 1; ; try++ {
		l := liveOpen(t, liveClient(t, srv.Addr()), fmt.Sprintf("forget%d", try), "2/300ms", redisrate.Options{CounterAbove: -1})
		for range 2 {
			if _, err := l.Admit(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(700 * time.Millisecond) // the buckets no longer overlap the window
		if _, err := l.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
		admitted := time.Now()
		if s := l.Stats(); s.Waits != 0 || s.Rules[0].Used != 1 {
			t.Errorf("Stats() = %+v, want no wait and 1 held", s)
		}
		key := l.Keys()[1]
		// born (the counter was begun anew), lo, hi, total and the
		// bucket of the third call.
		fields := do(t, srv, "HKEYS", key)
		total := do(t, srv, "HGET", key, "total")
		if time.Since(admitted) > 250*time.Millisecond && try < 5 {
			continue
		}
		if len(strings.Split(fields, "\n")) != 5 {
			t.Errorf("HKEYS %s = %q, want the old buckets deleted", key, fields)
		}
		if total != "1" {
			t.Errorf("total = %s, want 1", total)
		}
		return
	}
}

// Processes sharing a quota keep the widest margin in force among them: a
// call admitted a window after another process's is kept a window plus
// that process's margin later, and a margin widened after a call reaches
// Redis before its process asks again.
func TestLiveFleetMargin(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := liveClient(t, srv.Addr())
	wide := liveOpen(t, c, "fleet-margin", "1/200ms", redisrate.Options{Margin: 150 * time.Millisecond})
	narrow := liveOpen(t, c, "fleet-margin", "1/200ms", redisrate.Options{})
	admit := func(l *redisrate.Limiter) time.Time {
		t.Helper()
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
		return a.At
	}
	first := admit(wide)
	second := admit(narrow)
	if gap := second.Sub(first); gap < 350*time.Millisecond {
		t.Errorf("narrow admitted %v after wide's call, want at least 200ms + wide's 150ms margin", gap)
	}
	wide.SetMargin(0) // narrower: nothing to tell
	third := admit(wide)
	if gap := third.Sub(second); gap < 200*time.Millisecond {
		t.Errorf("wide admitted %v after narrow's call, want at least 200ms", gap)
	}
	wide.SetMargin(300 * time.Millisecond) // its call left late
	waitFor(t, "the widened margin in Redis", 5*time.Second, func() bool {
		return strings.Contains(do(t, srv, "HVALS", "pace:{fleet-margin}:margins"), "300000:")
	})
	if gap := admit(narrow).Sub(third); gap < 500*time.Millisecond {
		t.Errorf("narrow admitted %v after wide's call, want at least 200ms + wide's widened 300ms", gap)
	}
}

// A process reaches its first admission in three round trips: HELLO on
// the new connection, the GET of the rules and the admission script
// (with one more, EVAL, while Redis does not have it). go-redis would
// also send CLIENT SETINFO and CLIENT MAINT_NOTIFICATIONS on every new
// connection, two more round trips each time, which over a slow link
// delay every process's first admission: Redis must see neither.
func TestLiveDialRoundTrips(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	l, err := redisrate.Dial(ctx, "redis://"+srv.Addr(), redisrate.Options{Key: "dial", Rules: mustRules(t, "5/s")})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := l.Admit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	stats := do(t, srv, "INFO", "commandstats")
	for _, line := range strings.Split(stats, "\n") {
		name, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		// Commands the script runs count too; what the client sends is
		// HELLO, GET, EVALSHA and EVAL (and redistest's PING, the test's
		// INFO).
		if strings.HasPrefix(name, "client") || name == "select" {
			t.Errorf("Redis saw %s on connecting; want HELLO only:\n%s", name, stats)
		}
	}
	if errs := do(t, srv, "INFO", "errorstats"); strings.Contains(errs, "errorstat_ERR") {
		t.Errorf("Redis answered errors (a command it does not know, sent on connecting):\n%s", errs)
	}
}

// Processes whose margin is fixed (pace exec) keep it in one field of the
// margins for every process with that margin, not one each for as long as
// their calls count, and that field still protects their calls: a process
// with no margin of its own is kept a window plus the fixed margin after
// the first of them. The field never ends sooner than a process wrote.
func TestLiveFixedMarginSharesAField(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := liveClient(t, srv.Addr())
	const margin = 150 * time.Millisecond
	fixed := func() time.Time {
		t.Helper()
		l := liveOpen(t, c, "fixed", "3/500ms", redisrate.Options{Margin: margin, FixedMargin: true})
		defer l.Close()
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
		return a.At
	}
	first := fixed()
	fixed()
	fixed()
	if got := do(t, srv, "HKEYS", "pace:{fixed}:margins"); got != "~150000" {
		t.Errorf("HKEYS of the margins after three processes with a fixed 150ms margin = %q, want one field, ~150000", got)
	}
	narrow := liveOpen(t, c, "fixed", "3/500ms", redisrate.Options{})
	a, err := narrow.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if gap := a.At.Sub(first); gap < 500*time.Millisecond+margin {
		t.Errorf("the process without a margin admitted %v after the first fixed-margin call, want at least a window plus the margin, 650ms", gap)
	}
	// A write that would end sooner (Redis's clock stepped back, here
	// the field was moved ahead) keeps the later end.
	do(t, srv, "HSET", "pace:{fixed}:margins", "~150000", "150000:4000000000000000")
	fixed()
	if got := do(t, srv, "HGET", "pace:{fixed}:margins", "~150000"); got != "150000:4000000000000000" {
		t.Errorf("the fixed margin's field = %q after a write that ends sooner, want it kept: 150000:4000000000000000", got)
	}
}

// With CheckLater, Dial does not read the quota's rules (a round trip
// less for a process that admits at once): a quota kept with other rules
// is refused by the first admission instead, with a *throttle.MismatchError,
// and nothing of this process is recorded.
func TestLiveCheckLater(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	url := "redis://" + srv.Addr()
	first, err := redisrate.Dial(ctx, url, redisrate.Options{Key: "later", Rules: mustRules(t, "5/10s")})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := first.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := redisrate.Dial(ctx, url, redisrate.Options{Key: "later", Rules: mustRules(t, "6/10s")}); !errors.As(err, new(*throttle.MismatchError)) {
		t.Fatalf("Dial with other rules = %v, want a *throttle.MismatchError", err)
	}
	l, err := redisrate.Dial(ctx, url, redisrate.Options{Key: "later", Rules: mustRules(t, "6/10s"), CheckLater: true})
	if err != nil {
		t.Fatalf("Dial with other rules and CheckLater = %v, want no check yet", err)
	}
	defer l.Close()
	var mismatch *throttle.MismatchError
	if _, err := l.Admit(ctx, 1); !errors.As(err, &mismatch) || mismatch.Stored != "5/10s" || mismatch.Spec != "6/10s" {
		t.Fatalf("Admit with other rules = %v, want a *throttle.MismatchError: stored 5/10s, this process 6/10s", err)
	}
	if n := do(t, srv, "ZCARD", "pace:{later}:r0:5/10s"); n != "1" {
		t.Errorf("ZCARD of the quota's log = %s after the refused admission, want 1: only the first process's call", n)
	}
	if got := do(t, srv, "GET", "pace:{later}:rules"); got != "5/10s" {
		t.Errorf("the quota's rules = %q after the refused admission, want 5/10s kept", got)
	}
}
