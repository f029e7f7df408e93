//go:build unix

package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/throttletest"
)

// These tests run pace in process (Execute) against real redis-server
// processes started on free ports. Where timing matters the jobs are
// pace fetch requests to a jobServer, which records when each arrived and
// how many ran at once; elsewhere they are pace run commands that leave a
// file behind. The fleet of separate pace processes is in fleet_test.go.

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runPace runs pace in process with args and stdin and returns its exit
// code, stdout and stderr.
func runPace(stdin string, args ...string) (code int, stdout, stderr string) {
	ios, in, _, _ := Test()
	in.WriteString(stdin)
	out, errOut := &syncBuffer{}, &syncBuffer{}
	ios.Out, ios.ErrOut = out, errOut
	code = Execute(&Factory{IOStreams: ios, Clock: throttle.SystemClock()}, args)
	return code, out.String(), errOut.String()
}

// lines returns "1\n2\n...n\n".
func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

// jobServer is an HTTP server standing for the jobs of pace fetch: it
// answers each request with its path after delay, and records when each
// arrived, how often each path was asked for, and how many requests it
// was handling at once. It is safe for concurrent use.
type jobServer struct {
	*httptest.Server
	delay time.Duration

	mu             sync.Mutex
	arrivals       []time.Time
	paths          map[string]int
	inFlight, peak int
}

// newJobServer starts a jobServer on a loopback port; it stops with t.
func newJobServer(t *testing.T, delay time.Duration) *jobServer {
	js := &jobServer{delay: delay, paths: map[string]int{}}
	js.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		js.mu.Lock()
		js.arrivals = append(js.arrivals, time.Now())
		js.paths[r.URL.Path]++
		js.inFlight++
		js.peak = max(js.peak, js.inFlight)
		js.mu.Unlock()
		time.Sleep(js.delay)
		js.mu.Lock()
		js.inFlight--
		js.mu.Unlock()
		fmt.Fprintln(w, strings.TrimPrefix(r.URL.Path, "/"))
	}))
	t.Cleanup(js.Close)
	return js
}

// requests returns the number of requests so far.
func (js *jobServer) requests() int {
	js.mu.Lock()
	defer js.mu.Unlock()
	return len(js.arrivals)
}

// counts returns the arrival times, how often each path was asked for,
// and the most requests handled at once.
func (js *jobServer) counts() ([]time.Time, map[string]int, int) {
	js.mu.Lock()
	defer js.mu.Unlock()
	return slices.Clone(js.arrivals), maps.Clone(js.paths), js.peak
}

// checkOnce checks that paths holds /1 ... /n once each.
func checkOnce(t *testing.T, paths map[string]int, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if c := paths["/"+strconv.Itoa(i)]; c != 1 {
			t.Errorf("item %d requested %d times, want once", i, c)
		}
	}
	if len(paths) != n {
		t.Errorf("%d paths requested, want %d", len(paths), n)
	}
}

// files returns the names of the files in dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// waitFor polls cond every 5ms until it holds, failing t after 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sortedLines returns the lines of s, sorted numerically.
func sortedLines(s string) []string {
	l := strings.Fields(s)
	slices.SortFunc(l, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	return l
}

func TestRedisFlagsToOptions(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	args := []string{"-r", "1/s", "--redis", "redis://127.0.0.1:1/2", "--key", "api", "--global-jobs", "3", "--redis-timeout", "5s"}
	check := func(name string, c *CommonOptions) {
		t.Helper()
		if err := c.check(); err != nil {
			t.Fatalf("%s: check() = %v", name, err)
		}
		want := RedisOptions{URL: "redis://127.0.0.1:1/2", Key: "api", GlobalJobs: 3, Timeout: 5 * time.Second, urlSet: true}
		if c.Redis != want {
			t.Errorf("%s: Redis = %+v, want %+v", name, c.Redis, want)
		}
	}
	ro, err := parseRun(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	check("run", &ro.Common)
	fo, err := parseFetch(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	check("fetch", &fo.Common)

	// Defaults: no Redis; with one, the default key and timeout.
	ro, err = parseRun(t)
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Common.check(); err != nil || ro.Common.Redis != (RedisOptions{}) {
		t.Errorf("defaults: Redis = %+v, check() = %v; want none", ro.Common.Redis, err)
	}
	ro, err = parseRun(t, "-r", "1/s", "--redis", "redis://h")
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Common.check(); err != nil {
		t.Fatal(err)
	}
	if want := (RedisOptions{URL: "redis://h", Key: "default", Timeout: 30 * time.Second, urlSet: true}); ro.Common.Redis != want {
		t.Errorf("defaults with --redis: Redis = %+v, want %+v", ro.Common.Redis, want)
	}
}

func TestRedisURLFromEnv(t *testing.T) {
	t.Setenv(redisURLEnv, "redis://127.0.0.1:7/1")
	ro, err := parseRun(t, "-r", "1/s")
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Common.check(); err != nil {
		t.Fatal(err)
	}
	if ro.Common.Redis.URL != "redis://127.0.0.1:7/1" {
		t.Errorf("URL = %q, want $%s", ro.Common.Redis.URL, redisURLEnv)
	}
	// --redis wins over the environment, and --redis= turns it off.
	ro, _ = parseRun(t, "-r", "1/s", "--redis", "redis://other:1")
	if ro.Common.check(); ro.Common.Redis.URL != "redis://other:1" {
		t.Errorf("--redis redis://other:1: URL = %q", ro.Common.Redis.URL)
	}
	ro, _ = parseRun(t, "-r", "1/s", "--redis=")
	if err := ro.Common.check(); err != nil || ro.Common.Redis.URL != "" {
		t.Errorf("--redis=: URL = %q, check() = %v; want no Redis", ro.Common.Redis.URL, err)
	}
}

func TestRedisFlagErrors(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	const url = "redis://u:pa55word@127.0.0.1:1"
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-r", "1/s", "--global-jobs", "2"}, "--global-jobs needs --redis"},
		{[]string{"-r", "1/s", "--key", "k"}, "--key needs --redis"},
		{[]string{"-r", "1/s", "--redis-timeout", "1s"}, "--redis-timeout needs --redis"},
		{[]string{"-r", "1/s", "--redis", url, "--key", "a{b}"}, `invalid argument "a{b}" for "--key"`},
		{[]string{"-r", "1/s", "--redis", url, "--global-jobs", "-1"}, `invalid argument -1 for "--global-jobs"`},
		{[]string{"-r", "1/s", "--redis", url, "--redis-timeout", "-1s"}, `invalid argument -1s for "--redis-timeout"`},
		{[]string{"--redis", url}, "give -r, --global-jobs or both"},
		{[]string{"-r", "1/s", "--redis", "redis://u:pa55word@127.0.0.1:notaport"}, `invalid "--redis"`},
		{[]string{"-r", "1/s", "--redis", "http://u:pa55word@127.0.0.1:1"}, `invalid "--redis"`},
	} {
		ro, err := parseRun(t, tt.args...)
		if err == nil {
			err = ro.Common.check()
		}
		var fe *FlagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("pace run %q: %v, want a usage error containing %q", tt.args, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "pa55word") {
			t.Errorf("pace run %q: error %q shows the password", tt.args, err)
		}
	}
	// A bad $PACE_REDIS_URL is named as such, redacted.
	t.Setenv(redisURLEnv, "redis://u:pa55word@127.0.0.1:notaport")
	ro, _ := parseRun(t, "-r", "1/s")
	err := ro.Common.check()
	if err == nil || !strings.Contains(err.Error(), "$PACE_REDIS_URL") || strings.Contains(err.Error(), "pa55word") {
		t.Errorf("bad $%s: check() = %v, want an error naming it, without the password", redisURLEnv, err)
	}
}

func TestRedisHelpHidesPassword(t *testing.T) {
	t.Setenv(redisURLEnv, "redis://u:hunter2pw@127.0.0.1:1")
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"fetch", "--help"}} {
		code, out, errOut := runPace("", args...)
		if code != 0 || !strings.Contains(out, "--redis URL") {
			t.Errorf("pace %q = %d, want 0 and help mentioning --redis URL:\n%s%s", args, code, out, errOut)
		}
		if strings.Contains(out+errOut, "hunter2pw") {
			t.Errorf("pace %q shows the password of $%s", args, redisURLEnv)
		}
	}
}

func TestRedactor(t *testing.T) {
	red := newRedactor("redis://user:p%40ss%2Fw@host:1/0", "p@ss/w")
	for in, want := range map[string]string{
		"dial redis://user:p%40ss%2Fw@host:1/0: refused": "dial redis://user:xxxxx@host:1/0: refused",
		"auth p@ss/w failed":                             "auth xxxxx failed",
		"auth p%40ss%2Fw failed":                         "auth xxxxx failed",
		"nothing secret":                                 "nothing secret",
	} {
		if got := red(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
	if got := newRedactor("redis://host:1", "")("redis://host:1 down"); got != "redis://host:1 down" {
		t.Errorf("no password: redact changed %q", got)
	}
}

func TestRedisHealthMessages(t *testing.T) {
	clock := throttletest.NewFakeClock(time.Unix(1e9, 0))
	var out strings.Builder
	h := &redisHealth{clock: clock, url: "redis://u:xxxxx@h:1", timeout: 30 * time.Second,
		redact: newRedactor("redis://u:secretpw@h:1", "secretpw")}
	h.setOutput(&out)
	down := errors.New("dial tcp h:1: connection refused (secretpw)")
	h.observe(clock.Now(), nil)
	if out.Len() != 0 {
		t.Fatalf("messages while Redis answers: %q", out.String())
	}
	// A failure says so at once, and only once.
	h.observe(clock.Now(), down)
	clock.Advance(time.Second)
	h.observe(clock.Now(), down)
	h.stalled(clock.Now())
	clock.Advance(1500 * time.Millisecond)
	h.observe(clock.Now(), redis.Nil) // an error reply is an answer
	h.observe(clock.Now(), nil)
	// A call unanswered for a while says so before it fails; one that
	// was answered in the meantime does not.
	began := clock.Now()
	clock.Advance(time.Second)
	h.stalled(began)
	clock.Advance(time.Second)
	h.observe(began, nil)
	began = clock.Now()
	clock.Advance(time.Millisecond)
	h.observe(clock.Now(), nil) // another call's answer
	h.stalled(began)
	want := "pace: redis redis://u:xxxxx@h:1 is not answering (dial tcp h:1: connection refused (xxxxx)); " +
		"starting no job until it does, for up to 30s\n" +
		"pace: redis redis://u:xxxxx@h:1 is answering again after 2.5s; going on\n" +
		"pace: redis redis://u:xxxxx@h:1 is not answering (no reply for 1s); starting no job until it does, for up to 30s\n" +
		"pace: redis redis://u:xxxxx@h:1 is answering again after 2s; going on\n"
	if out.String() != want {
		t.Errorf("messages:\n%s\nwant:\n%s", out.String(), want)
	}
	h.setOutput(nil)
	h.observe(clock.Now(), down) // silenced: must not write
}

func TestLimiterExitCode(t *testing.T) {
	for _, tt := range []struct {
		err       error
		otherwise int
		want      int
	}{
		{fmt.Errorf("x: %w", throttle.ErrRuleMismatch), ExitBackend, ExitUsage},
		{fmt.Errorf("x: %w: y", throttle.ErrBackend), ExitUsage, ExitBackend},
		{&redactedError{msg: "m", err: fmt.Errorf("x: %w", throttle.ErrBackend)}, ExitUsage, ExitBackend},
		{errors.New("other"), ExitUsage, ExitUsage},
		{&interruptedError{os.Interrupt}, ExitBackend, ExitInterrupted},
		{&interruptedError{syscall.SIGTERM}, ExitBackend, ExitTerminated},
	} {
		if got := limiterExitCode(tt.err, tt.otherwise); got != tt.want {
			t.Errorf("limiterExitCode(%v, %d) = %d, want %d", tt.err, tt.otherwise, got, tt.want)
		}
	}
}

// mismatchLimiter fails every admission as a quota kept with other rules
// would, found only at admission (another process got there between the
// check and the first admission).
type mismatchLimiter struct{}

func (mismatchLimiter) Acquire(context.Context) (func(), error) {
	return nil, fmt.Errorf("throttle: redis quota %q is kept with rules %q: %w", "k", "5/s", throttle.ErrRuleMismatch)
}
func (mismatchLimiter) Stats() throttle.Stats { return throttle.Stats{Binding: -1} }

func TestRuleMismatchAtAdmissionExits2(t *testing.T) {
	ios, in, out, errOut := Test()
	in.WriteString("1\n2\n")
	f := &Factory{IOStreams: ios, Clock: throttle.SystemClock(),
		NewLimiter: func(*CommonOptions) (Limiter, error) { return mismatchLimiter{}, nil }}
	code := Execute(f, []string{"run", "--summary", "none", "--", "echo"})
	if code != ExitUsage || out.Len() != 0 || !strings.Contains(errOut.String(), "rule mismatch") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing run, the mismatch", code, out, errOut)
	}
}

// TestRedisSpecMatchesThrottle checks that the rule spec pace compares
// before the run (RedisLimiter.Spec) is the one throttle stores in Redis
// and compares at admission.
func TestRedisSpecMatchesThrottle(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer client.Close()
	for i, tt := range []struct {
		rules      string
		globalJobs int
	}{
		{"10/s", 0},
		{"500/min,10/s,3/100ms,20/1s", 0},
		{"100/1m30s,7/3s", 4},
		{"1000000/day,5/s", 1},
	} {
		rules, err := throttle.ParseRules(tt.rules)
		if err != nil {
			t.Fatal(err)
		}
		key := "spec" + strconv.Itoa(i)
		l, err := throttle.NewRedis(client, key, rules, throttle.WithGlobalJobs(tt.globalJobs))
		if err != nil {
			t.Fatal(err)
		}
		release, err := l.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		release()
		l.Close()
		stored, err := srv.Do("GET", l.Keys()[0])
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Spec(); got != stored {
			t.Errorf("rules %s, global jobs %d: Spec() = %q, but Redis holds %q", tt.rules, tt.globalJobs, got, stored)
		}
	}
}

func TestRedisRuleMismatch(t *testing.T) {
	srv := redistest.Start(t)
	url := "redis://" + srv.Addr()
	dir := t.TempDir()
	run := func(args ...string) (int, string, string) {
		base := []string{"run", "--redis", url, "--key", "shared", "--summary", "none", "--redis-timeout", "5s"}
		return runPace("1\n2\n", append(append(base, args...), "--", "touch", filepath.Join(dir, "{}"))...)
	}
	if code, _, errOut := run("-r", "20/10s", "-r", "10/s"); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, errOut)
	}
	// The same rules in another order share the quota.
	if code, _, errOut := run("-r", "10/s,20/10s"); code != 0 {
		t.Fatalf("same rules reordered: exit %d: %s", code, errOut)
	}
	if err := os.RemoveAll(dir); err != nil || os.Mkdir(dir, 0o755) != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-r", "21/10s,10/s"},
		{"-r", "20/10s"},
		{"-r", "20/10s,10/s", "--global-jobs", "2"},
	} {
		code, out, errOut := run(args...)
		if code != ExitUsage || out != "" ||
			!strings.Contains(errOut, `pace: redis quota "shared" at `+url+` is kept with rules "10/s,20/10s", this process has`) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and the mismatch", args, code, out, errOut)
		}
	}
	if ran := files(t, dir); len(ran) > 0 {
		t.Errorf("jobs %v ran after a mismatch", ran)
	}
	// Another key is another quota; fetch checks the same way.
	if code, _, errOut := run("-r", "6/10s", "--key", "other"); code != 0 {
		t.Errorf("another key: exit %d: %s", code, errOut)
	}
	code, _, errOut := runPace("http://127.0.0.1:1/x\n", "fetch", "--redis", url, "--key", "shared", "-r", "1/s", "--summary", "none")
	if code != ExitUsage || !strings.Contains(errOut, "is kept with rules") {
		t.Errorf("fetch with other rules: exit %d, stderr %q; want 2 and the mismatch", code, errOut)
	}
}

// deadRedisURL returns the URL, with a password, of a loopback port where
// nothing listens.
func deadRedisURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "redis://pace:dead5ecret@" + addr
}

func TestRedisUnreachableExits3(t *testing.T) {
	url := deadRedisURL(t)
	dir := t.TempDir()
	js := newJobServer(t, 0)
	for _, cmd := range [][]string{
		{"run", "-r", "5/s", "--redis", url, "--redis-timeout", "1s", "-v", "--", "touch", filepath.Join(dir, "{}")},
		{"fetch", "-r", "5/s", "--redis", url, "--redis-timeout", "1s", "-v", js.URL + "/{}"},
	} {
		start := time.Now()
		code, out, errOut := runPace("1\n2\n", cmd...)
		took := time.Since(start)
		if code != ExitBackend || out != "" {
			t.Errorf("%s: exit %d, stdout %q; want 3 and nothing run\n%s", cmd[0], code, out, errOut)
		}
		if took < time.Second || took > 10*time.Second {
			t.Errorf("%s: gave up after %v, want after --redis-timeout 1s", cmd[0], took)
		}
		redacted := throttle.RedactURL(url)
		for _, want := range []string{
			"pace: redis " + redacted + " is not answering",
			"pace: redis " + redacted + ": no answer for 1s: throttle: backend unavailable",
		} {
			if !strings.Contains(errOut, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", cmd[0], want, errOut)
			}
		}
		if strings.Contains(errOut, "dead5ecret") {
			t.Errorf("%s: stderr shows the password:\n%s", cmd[0], errOut)
		}
	}
	if ran := files(t, dir); len(ran) > 0 || js.requests() > 0 {
		t.Errorf("jobs ran without Redis: files %v, %d requests", ran, js.requests())
	}
}

func TestRedisInterruptWhileWaitingForRedis(t *testing.T) {
	for _, tt := range []struct {
		sig  os.Signal
		code int
	}{{os.Interrupt, ExitInterrupted}, {syscall.SIGTERM, ExitTerminated}} {
		ios, in, out, errOut := Test()
		in.WriteString("1\n")
		sigs := make(chan os.Signal, 1)
		f := &Factory{IOStreams: ios, Clock: throttle.SystemClock(), Signals: sigs}
		time.AfterFunc(300*time.Millisecond, func() { sigs <- tt.sig })
		start := time.Now()
		code := Execute(f, []string{"run", "-r", "1/s", "--redis", deadRedisURL(t), "--redis-timeout", "1m", "--", "echo"})
		if code != tt.code || out.Len() != 0 || time.Since(start) > 10*time.Second {
			t.Errorf("%v while Redis is down: exit %d after %v, stdout %q; want %d at once, nothing run",
				tt.sig, code, time.Since(start), out, tt.code)
		}
		if want := "pace: " + signalName(tt.sig) + ": stopped before anything ran"; !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr %q lacks %q", errOut, want)
		}
	}
}

func TestRedisPasswordNeverPrinted(t *testing.T) {
	const pw = "Sup3rSecretPw"
	srv := redistest.Start(t)
	if _, err := srv.Do("CONFIG", "SET", "requirepass", pw); err != nil {
		t.Fatal(err)
	}
	good := "redis://:" + pw + "@" + srv.Addr()
	bad := "redis://default:Wr0ngSecretPw@" + srv.Addr()
	for _, args := range [][]string{
		{"run", "-r", "10/s", "--global-jobs", "2", "--redis", good, "--key", "a", "-v", "--summary", "json", "--", "echo"},
		{"run", "-r", "10/s", "--redis", good, "--key", "b", "--progress", "always", "--summary", "text", "--", "echo"},
		{"fetch", "-r", "10/s", "--redis", good, "--key", "c", "-v", "--summary", "json", newJobServer(t, 0).URL + "/{}"},
	} {
		code, out, errOut := runPace("1\n2\n", args...)
		if code != 0 {
			t.Errorf("%q: exit %d: %s", args, code, errOut)
		}
		if strings.Contains(out+errOut, pw) {
			t.Errorf("%q: output shows the password:\n%s%s", args, out, errOut)
		}
	}
	// A wrong password is a backend failure: exit 3 at once, redacted.
	start := time.Now()
	code, out, errOut := runPace("1\n", "run", "-r", "10/s", "--redis", bad, "-v", "--", "echo")
	if code != ExitBackend || out != "" || !strings.Contains(errOut, "WRONGPASS") || time.Since(start) > 5*time.Second {
		t.Errorf("wrong password: exit %d after %v, stdout %q, stderr %q; want 3 at once", code, time.Since(start), out, errOut)
	}
	if strings.Contains(errOut, "Wr0ngSecretPw") {
		t.Errorf("wrong password: stderr shows it:\n%s", errOut)
	}
}

// TestRedisRestartMidRun kills Redis in the middle of a run and starts it
// again: no job starts while it is down, and every item runs exactly once.
func TestRedisRestartMidRun(t *testing.T) {
	srv := redistest.Start(t)
	js := newJobServer(t, 0)
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runPace(lines(30), "fetch", "-r", "10/s", "-j", "4", "--redis", "redis://"+srv.Addr(),
			"--key", "restart", "--redis-timeout", "20s", "--retries", "0", "--summary", "json", js.URL+"/{}")
		done <- result{code, out, errOut}
	}()
	waitFor(t, "10 requests", func() bool { return js.requests() >= 10 })
	srv.Kill()
	killed := time.Now()
	time.Sleep(2 * time.Second)
	restarted := time.Now()
	srv.Restart()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("pace did not finish after Redis came back")
	}
	if r.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", r.code, r.errOut)
	}
	if got, want := sortedLines(r.out), strings.Fields(lines(30)); !slices.Equal(got, want) {
		t.Errorf("bodies printed = %v, want each of 1..30 once", got)
	}
	arrivals, paths, _ := js.counts()
	checkOnce(t, paths, 30)
	// A request admitted just before the kill may arrive a little after it.
	for _, at := range arrivals {
		if at.After(killed.Add(100*time.Millisecond)) && at.Before(restarted) {
			t.Errorf("a request arrived %v after Redis was killed, %v before it came back",
				at.Sub(killed).Round(time.Millisecond), restarted.Sub(at).Round(time.Millisecond))
		}
	}
	if !slices.ContainsFunc(arrivals, func(at time.Time) bool { return at.Before(killed) }) ||
		!slices.ContainsFunc(arrivals, func(at time.Time) bool { return at.After(restarted) }) {
		t.Errorf("want requests both before the kill and after the restart")
	}
	for _, want := range []string{"is not answering", "is answering again after"} {
		if !strings.Contains(r.errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.errOut)
		}
	}
}

// TestRedisTimeoutMidRun kills Redis for good while jobs run: they
// finish, nothing more starts, and pace exits 3 once --redis-timeout has
// passed without an answer.
func TestRedisTimeoutMidRun(t *testing.T) {
	srv := redistest.Start(t)
	js := newJobServer(t, time.Second)
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runPace(lines(6), "fetch", "-r", "100/s", "-j", "2", "--redis", "redis://"+srv.Addr(),
			"--redis-timeout", "1s", "--summary", "text", js.URL+"/{}")
		done <- result{code, out, errOut}
	}()
	waitFor(t, "2 requests", func() bool { return js.requests() >= 2 })
	srv.Kill()
	r := <-done
	if r.code != ExitBackend {
		t.Errorf("exit %d, want 3:\n%s", r.code, r.errOut)
	}
	if got := sortedLines(r.out); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("bodies printed %v, want those of the 2 requests running", got)
	}
	if n := js.requests(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	for _, want := range []string{"is not answering",
		"pace: limiter failed: runner: admit job 3: redis redis://" + srv.Addr() + `: throttle: redis quota "default": no answer for 1s`,
		"pace: 2 ok, 0 failed"} {
		if !strings.Contains(r.errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.errOut)
		}
	}
}

// TestRedisGlobalJobs runs two pace instances sharing --global-jobs 3,
// each allowed -j 4: never more than 3 requests run at once between them.
func TestRedisGlobalJobs(t *testing.T) {
	srv := redistest.Start(t)
	js := newJobServer(t, 300*time.Millisecond)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	errOuts := make([]string, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _, errOuts[i] = runPace(lines(6), "fetch", "-r", "100/s", "-j", "4", "--global-jobs", "3",
				"--redis", "redis://"+srv.Addr(), "--key", "gj", "--summary", "none", js.URL+"/"+strconv.Itoa(i)+"/{}")
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("instance %d: exit %d:\n%s", i, c, errOuts[i])
		}
	}
	_, paths, peak := js.counts()
	if len(paths) != 12 {
		t.Errorf("%d paths requested, want 12", len(paths))
	}
	// The server sees a request after its admission and answers before
	// its release, so it can only see fewer at once than were admitted.
	if peak > 3 {
		t.Errorf("%d requests ran at once, want at most --global-jobs 3", peak)
	}
	if peak < 2 {
		t.Errorf("at most %d request ran at once; the cap of 3 should allow more", peak)
	}
}

// Script support: redis_*.txtar start servers with the redis command.

// cmdRedis starts a redis-server for a script, or names a dead address:
//
//	redis start NAME [redis-server args...]  $NAME=redis://127.0.0.1:PORT, $NAME_ADDR=127.0.0.1:PORT
//	redis dead NAME                          the same for a port where nothing listens
//
// The server is killed when the script ends. Scripts that start one
// begin with "[!exec:redis-server] skip"; the Go tests of this package
// fail under CI=true when redis-server is missing.
func cmdRedis(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: redis {start|dead} NAME [args...]")
	}
	var addr string
	switch args[0] {
	case "start":
		addr = redistest.Start(scriptTB{ts: ts}, args[2:]...).Addr()
	case "dead":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		addr = ln.Addr().String()
		ln.Close()
	default:
		ts.Fatalf("redis %s: want start or dead", args[0])
	}
	ts.Setenv(args[1], "redis://"+addr)
	ts.Setenv(args[1]+"_ADDR", addr)
}

// scriptTB lets redistest run inside a script command: it reports to the
// script and cleans up when the script ends. It implements only what
// redistest uses (Helper, Fatalf, Skipf, TempDir, Cleanup); the embedded
// nil TB makes anything else panic.
type scriptTB struct {
	testing.TB
	ts *testscript.TestScript
}

func (scriptTB) Helper()                             {}
func (s scriptTB) Fatalf(format string, args ...any) { s.ts.Fatalf(format, args...) }
func (s scriptTB) Skipf(format string, args ...any)  { s.ts.Fatalf(format, args...) } // see cmdRedis
func (s scriptTB) Cleanup(f func())                  { s.ts.Defer(f) }

func (s scriptTB) TempDir() string {
	dir, err := os.MkdirTemp(s.ts.Getenv("WORK"), "redis")
	s.ts.Check(err)
	return dir
}
