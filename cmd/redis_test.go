package cmd

import (
	"errors"
	"fmt"
	"io"
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

	"github.com/pace-cli/pace/internal/interrupt"
	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/internal/tcptest"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// The tests here that need Redis start their own redis-server on a free
// port (internal/redistest): they fail under CI=true when it is missing,
// and are skipped elsewhere.

func TestRedisFlagsToOptions(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	args := []string{"-r", "1/s", "--redis", "redis://127.0.0.1:1/2", "--key", "api", "--global-jobs", "3", "--redis-timeout", "5s"}
	want := RedisOptions{URL: "redis://127.0.0.1:1/2", Key: "api", GlobalJobs: 3, Timeout: 5 * time.Second, urlSet: true, keySet: true, timeoutSet: true}
	ro, err := parseRun(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	fo, err := parseFetch(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*CommonOptions{"run": &ro.Common, "fetch": &fo.Common} {
		if err := c.check(); err != nil || c.Redis != want {
			t.Errorf("%s: Redis = %+v, check() = %v; want %+v", name, c.Redis, err, want)
		}
	}

	// Defaults: no Redis; with one, the default key and timeout.
	ro, _ = parseRun(t)
	if err := ro.Common.check(); err != nil || ro.Common.Redis != (RedisOptions{}) {
		t.Errorf("defaults: Redis = %+v, check() = %v; want none", ro.Common.Redis, err)
	}
	ro, _ = parseRun(t, "-r", "1/s", "--redis", "redis://h")
	want = RedisOptions{URL: "redis://h", Key: redisrate.DefaultKey, Timeout: redisrate.DefaultTimeout, urlSet: true}
	if err := ro.Common.check(); err != nil || ro.Common.Redis != want {
		t.Errorf("defaults with --redis: Redis = %+v, check() = %v; want %+v", ro.Common.Redis, err, want)
	}
	// --global-jobs alone is enough to share something.
	ro, _ = parseRun(t, "--redis", "redis://h", "--global-jobs", "2")
	if err := ro.Common.check(); err != nil {
		t.Errorf("--redis with --global-jobs and no -r: check() = %v, want nil", err)
	}
}

func TestRedisURLFromEnv(t *testing.T) {
	t.Setenv(redisURLEnv, "redis://127.0.0.1:7/1")
	ro, _ := parseRun(t, "-r", "1/s")
	if err := ro.Common.check(); err != nil || ro.Common.Redis.URL != "redis://127.0.0.1:7/1" {
		t.Errorf("URL = %q, check() = %v; want $%s", ro.Common.Redis.URL, err, redisURLEnv)
	}
	// --redis wins over the environment, and --redis= turns it off.
	ro, _ = parseRun(t, "-r", "1/s", "--redis", "redis://other:1")
	if err := ro.Common.check(); err != nil || ro.Common.Redis.URL != "redis://other:1" {
		t.Errorf("--redis redis://other:1: URL = %q, check() = %v", ro.Common.Redis.URL, err)
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
		{[]string{"-r", "1/s", "--global-jobs", "2"}, "--global-jobs needs --redis URL (processes sharing a Redis) or --key NAME (processes on this host); -j caps the jobs of one process"},
		{[]string{"-r", "1/s", "--key", ""}, `invalid argument "" for "--key": want a name, such as api`},
		{[]string{"-r", "1/s", "--redis-timeout", "1s"}, "--redis-timeout needs --redis (or $PACE_REDIS_URL)"},
		{[]string{"-r", "1/s", "--redis", url, "--key", ""},
			`invalid argument "" for "--key": want a name; leave --key out for the shared default quota "default"`},
		{[]string{"-r", "1/s", "--redis", url, "--key", "a{b}"}, `invalid argument "a{b}" for "--key": want a name without '{' or '}'`},
		{[]string{"-r", "1/s", "--redis", url, "--key", "evil\n\x1b[31mkey"}, `invalid argument "evil\n\x1b[31mkey" for "--key": want a name without control characters`},
		{[]string{"-r", "1/s", "--redis", url, "--key", strings.Repeat("k", 257)}, `invalid argument "` + strings.Repeat("k", 64) + `..." for "--key": want a name of at most 256 bytes, not 257`},
		{[]string{"-r", "1/s", "--redis", url, "--global-jobs", "-1"}, `invalid argument -1 for "--global-jobs": want at least 1, or 0 for no cap`},
		{[]string{"-r", "1/s", "--redis", url, "--redis-timeout", "0"}, `invalid argument 0s for "--redis-timeout": want more than 0, such as 30s`},
		{[]string{"-r", "1/s", "--redis", url, "--redis-timeout", "-1s"}, `invalid argument -1s for "--redis-timeout": want more than 0, such as 30s`},
		{[]string{"--redis", url}, `"--redis" shares rate rules and --global-jobs with other processes: give -r, --global-jobs or both`},
		{[]string{"-r", "1/s", "--redis", "redis://u:pa55word@127.0.0.1:notaport"}, `invalid "--redis": `},
		{[]string{"-r", "1/s", "--redis", "http://u:pa55word@127.0.0.1:1"}, `invalid "--redis": `},
	} {
		ro, err := parseRun(t, tt.args...)
		if err == nil {
			err = ro.Common.check()
		}
		var fe *FlagError
		if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("pace run %q: %v, want a FlagError %q", tt.args, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "pa55word") {
			t.Errorf("pace run %q: error %q shows the password", tt.args, err)
		}
	}
	// A bad $PACE_REDIS_URL is named as such, redacted.
	t.Setenv(redisURLEnv, "redis://u:pa55word@127.0.0.1:notaport")
	ro, _ := parseRun(t, "-r", "1/s")
	err := ro.Common.check()
	if err == nil || !strings.HasPrefix(err.Error(), "invalid $PACE_REDIS_URL: ") || strings.Contains(err.Error(), "pa55word") {
		t.Errorf("bad $%s: check() = %v, want an error naming it, without the password", redisURLEnv, err)
	}
}

func TestRedisHelpHidesPassword(t *testing.T) {
	t.Setenv(redisURLEnv, "redis://u:hunter2pw@127.0.0.1:1")
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"fetch", "--help"}} {
		code, stdout, stderr := execPace(t, "", args...)
		// pace --help leaves pace run's flags to pace run --help.
		if code != 0 || (args[0] != "--help" && !strings.Contains(stdout, "--redis URL")) {
			t.Errorf("pace %q = %d, want 0 and help mentioning --redis URL:\n%s%s", args, code, stdout, stderr)
		}
		if strings.Contains(stdout+stderr, "hunter2pw") {
			t.Errorf("pace %q shows the password of $%s", args, redisURLEnv)
		}
	}
	// The flag's value, shown by cobra for instance in errors.
	o := &RedisOptions{}
	v := redisURLValue{&o.URL, &o.urlSet}
	v.Set("redis://u:hunter2pw@h:1")
	if s := v.String(); strings.Contains(s, "hunter2pw") || !strings.Contains(s, "h:1") {
		t.Errorf("--redis value String() = %q, want the URL without its password", s)
	}
}

func TestBackendExitCode(t *testing.T) {
	for _, tt := range []struct {
		err             error
		otherwise, want int
	}{
		{fmt.Errorf("x: %w", &throttle.MismatchError{Key: "k"}), ExitBackend, ExitUsage},
		{fmt.Errorf("x: %w: y", throttle.ErrBackend), ExitUsage, ExitBackend},
		{errors.New("other"), ExitUsage, ExitUsage},
		{errors.New("other"), ExitBackend, ExitBackend},
	} {
		if got := backendExitCode(tt.err, tt.otherwise); got != tt.want {
			t.Errorf("backendExitCode(%v, %d) = %d, want %d", tt.err, tt.otherwise, got, tt.want)
		}
	}
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

// numbers returns "1\n2\n...n\n".
func numbers(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
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

// waitFor polls cond every 5ms until it holds, failing t after 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startPace runs pace in process in a goroutine; wait returns its exit
// code, and stderr may be read meanwhile.
func startPace(t *testing.T, stdin string, args ...string) (stdout, stderr *syncBuffer, wait func() int) {
	ios, out, errOut := testIO(stdin)
	done := make(chan int, 1)
	go func() { done <- Execute(&Factory{IOStreams: ios}, args) }()
	return out, errOut, func() int {
		select {
		case code := <-done:
			return code
		case <-time.After(30 * time.Second):
			t.Fatalf("pace %q did not finish\n%s", args, errOut)
			return -1
		}
	}
}

func TestRedisRuleMismatch(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	url := "redis://" + srv.Addr()
	js := newJobServer(t, 0)
	fetch := func(key string, args ...string) (int, string, string) {
		return execPace(t, "1\n2\n", append(append([]string{"fetch", "--redis", url, "--key", key, "--summary", "none", "--progress", "never"}, args...), js.URL+"/{}")...)
	}
	if code, _, stderr := fetch("shared", "-r", "20/10s", "-r", "10/s"); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	// The same rules in another order share the quota.
	if code, _, stderr := fetch("shared", "-r", "10/s,20/10s"); code != 0 {
		t.Fatalf("same rules reordered: exit %d: %s", code, stderr)
	}
	before := js.requests()
	for _, args := range [][]string{{"-r", "21/10s,10/s"}, {"-r", "20/10s"}, {"-r", "20/10s,10/s", "--global-jobs", "2"}} {
		code, stdout, stderr := fetch("shared", args...)
		want := `pace: redis quota "shared" at ` + url + ` is kept with rules "10/s,20/10s", this process has "`
		if code != ExitUsage || stdout != "" || !strings.HasPrefix(stderr, want) ||
			!strings.Contains(stderr, `give every process sharing --key the same -r and --global-jobs, use another --key, or wait until the quota has been unused for its longest window
`) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and the mismatch", args, code, stdout, stderr)
		}
	}
	if n := js.requests(); n != before {
		t.Errorf("%d requests after a mismatch, want none", n-before)
	}
	// Another key is another quota.
	if code, _, stderr := fetch("other", "-r", "6/10s"); code != 0 {
		t.Errorf("another key: exit %d: %s", code, stderr)
	}
}

// deadRedisURL returns the URL, with a password, of a loopback port where
// nothing listens.
func deadRedisURL(t *testing.T) string {
	return "redis://pace:dead5ecret@" + redistest.DeadAddr(t)
}

// silentRedisURL returns the URL, with a password, of a loopback port
// that accepts connections and never answers: a Redis that hangs.
func silentRedisURL(t *testing.T) string {
	return "redis://pace:dead5ecret@" + tcptest.Serve(t, silentServe)
}

// silentServe reads what comes on c, answering nothing, until the client
// closes it (a tcptest.Serve's serve).
func silentServe(c net.Conn) { io.Copy(io.Discard, c) }

// TestRedisRefusedAtStart: an address where nothing listens (a wrong
// port, a Redis not started) is not an outage to ride out: pace exits 3
// at once, long before --redis-timeout, saying what is wrong, for every
// command that opens the quota.
func TestRedisRefusedAtStart(t *testing.T) {
	url := deadRedisURL(t)
	for _, args := range [][]string{
		{"run", "-r", "1/s", "--redis", url, "--redis-timeout", "1m", "--", "echo"},
		{"fetch", "-r", "1/s", "--redis", url, "--redis-timeout", "1m", "http://127.0.0.1:1/{}"},
		{"exec", "-r", "1/s", "--redis", url, "--redis-timeout", "1m", "--", "echo"},
	} {
		start := time.Now()
		code, stdout, stderr := execPace(t, "1\n", args...)
		if code != ExitBackend || stdout != "" || time.Since(start) > 30*time.Second {
			t.Errorf("pace %s at a port where nothing listens = exit %d after %v, stdout %q; want 3 at once", args[0], code, time.Since(start), stdout)
		}
		if !strings.Contains(stderr, "connection refused: no Redis listens at 127.0.0.1:") || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "dead5ecret") {
			t.Errorf("pace %s at a port where nothing listens: stderr %q; want one line saying no Redis listens there, and no password", args[0], stderr)
		}
	}
}

// TestRedisInterruptWhileConnecting: a signal while pace waits for a Redis
// that does not answer stops it at once, before anything ran.
func TestRedisInterruptWhileConnecting(t *testing.T) {
	for _, tt := range []struct {
		sig  os.Signal
		code int
	}{{os.Interrupt, ExitInterrupted}, {syscall.SIGTERM, ExitTerminated}} {
		ios, out, errOut := testIO("1\n")
		sigs := make(chan os.Signal, 1)
		sigs <- tt.sig
		start := time.Now()
		code := Execute(&Factory{IOStreams: ios, Signals: sigs}, []string{"run", "-r", "1/s", "--redis", silentRedisURL(t), "--redis-timeout", "1m", "--", "echo"})
		if code != tt.code || out.String() != "" || time.Since(start) > 10*time.Second {
			t.Errorf("%v while Redis is down: exit %d after %v, stdout %q; want %d at once, nothing run", tt.sig, code, time.Since(start), out, tt.code)
		}
		if want := "pace: " + interrupt.Name(tt.sig) + ": stopped before anything ran\n"; !strings.Contains(errOut.String(), want) || strings.Contains(errOut.String(), "dead5ecret") {
			t.Errorf("stderr %q, want %q and no password", errOut, want)
		}
	}
}

func TestRedisPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	const pw = "Sup3rSecretPw"
	srv := redistest.Start(t)
	if _, err := srv.Do("CONFIG", "SET", "requirepass", pw); err != nil {
		t.Fatal(err)
	}
	good := "redis://:" + pw + "@" + srv.Addr()
	bad := "redis://default:Wr0ngSecretPw@" + srv.Addr()
	js := newJobServer(t, 0)
	for _, args := range [][]string{
		{"fetch", "-r", "10/s", "--global-jobs", "2", "--redis", good, "--key", "a", "-v", "--summary", "json", js.URL + "/{}"},
		{"fetch", "-r", "10/s", "--redis", good, "--key", "b", "--progress", "always", "--summary", "text", js.URL + "/{}"},
	} {
		code, stdout, stderr := execPace(t, "1\n2\n", args...)
		if code != 0 {
			t.Errorf("%q: exit %d: %s", args, code, stderr)
		}
		if strings.Contains(stdout+stderr, pw) {
			t.Errorf("%q: output shows the password:\n%s%s", args, stdout, stderr)
		}
		if args[len(args)-3] == "json" && !strings.Contains(stderr, `pace: redis: quota "a" at redis://:REDACTED@`+srv.Addr()+"\n") {
			t.Errorf("%q: -v does not say which quota:\n%s", args, stderr)
		}
	}
	// A wrong password is a backend failure: exit 3 at once, redacted.
	start := time.Now()
	code, stdout, stderr := execPace(t, "1\n", "fetch", "-r", "10/s", "--redis", bad, "-v", js.URL+"/{}")
	if code != ExitBackend || stdout != "" || !strings.Contains(stderr, "WRONGPASS") || time.Since(start) > 5*time.Second {
		t.Errorf("wrong password: exit %d after %v, stdout %q, stderr %q; want 3 at once", code, time.Since(start), stdout, stderr)
	}
	if strings.Contains(stderr, "Wr0ngSecretPw") {
		t.Errorf("wrong password: stderr shows it:\n%s", stderr)
	}
	// No password: Redis answers the admission script (more than 10
	// arguments) "ERR Protocol error: unauthenticated multibulk length",
	// and pace quota show NOAUTH; both say what is missing.
	for _, args := range [][]string{
		{"exec", "--redis", "redis://" + srv.Addr(), "--key", "c", "-r", "10/s", "--", "true"},
		{"fetch", "--redis", "redis://" + srv.Addr(), "--key", "c", "-r", "10/s", js.URL + "/{}"},
		{"quota", "show", "--redis", "redis://" + srv.Addr(), "--key", "a"},
	} {
		code, _, stderr := execPace(t, "1\n", args...)
		if code != ExitBackend || !strings.Contains(stderr, "Redis wants a password and the URL gives none") {
			t.Errorf("%q without a password: exit %d, stderr %q; want 3 and what is missing", args, code, stderr)
		}
	}
}

// TestRedisRestartMidRun kills Redis in the middle of a run and starts it
// again: no job starts while it is down, pace says so, and every item runs
// exactly once.
func TestRedisRestartMidRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	js := newJobServer(t, 0)
	// 5 requests at once, then 5 a second later: Redis goes in between.
	stdout, stderr, wait := startPace(t, numbers(10), "fetch", "-r", "5/s", "-j", "5", "--redis", "redis://"+srv.Addr(),
		"--key", "restart", "--redis-timeout", "20s", "--retries", "0", "--summary", "none", "--progress", "never", js.URL+"/{}")
	waitFor(t, "5 requests", func() bool { return js.requests() >= 5 })
	srv.Kill()
	killed := time.Now()
	waitFor(t, "pace to see Redis gone", func() bool { return strings.Contains(stderr.String(), " is not answering (") })
	time.Sleep(100 * time.Millisecond)
	restarted := time.Now()
	srv.Restart()
	if code := wait(); code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, stderr)
	}
	checkOutage(t, stdout.String(), stderr.String(), js, killed, restarted)
}

// checkOutage checks a fetch of items 1..10 that Redis's outage from
// down to back interrupted: each body printed and each path asked for
// once, no request sent during the outage (one admitted just before it
// may arrive a little after), and pace saying Redis answers again.
func checkOutage(t *testing.T, stdout, stderr string, js *jobServer, down, back time.Time) {
	t.Helper()
	if got, want := sortedLines(stdout), strings.Fields(numbers(10)); !slices.Equal(got, want) {
		t.Errorf("bodies printed = %v, want each of 1..10 once", got)
	}
	arrivals, paths, _ := js.counts()
	if len(paths) != 10 || len(arrivals) != 10 {
		t.Errorf("%d requests for %d paths, want each of 10 once", len(arrivals), len(paths))
	}
	for _, at := range arrivals {
		if at.After(down.Add(100*time.Millisecond)) && at.Before(back) {
			t.Errorf("a request arrived %v after Redis stopped answering, %v before it answered again",
				at.Sub(down).Round(time.Millisecond), back.Sub(at).Round(time.Millisecond))
		}
	}
	if !strings.Contains(stderr, " is answering again after ") {
		t.Errorf("stderr does not say Redis answers again:\n%s", stderr)
	}
}

// TestRedisTimeoutMidRun kills Redis for good while jobs run: they
// finish, nothing more starts, and pace exits 3 once --redis-timeout has
// passed without an answer.
func TestRedisTimeoutMidRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	js := newJobServer(t, time.Second)
	stdout, stderr, wait := startPace(t, numbers(6), "fetch", "-r", "100/s", "-j", "2", "--redis", "redis://"+srv.Addr(),
		"--redis-timeout", "300ms", "--summary", "text", "--progress", "never", js.URL+"/{}")
	waitFor(t, "2 requests", func() bool { return js.requests() >= 2 })
	srv.Kill()
	if code := wait(); code != ExitBackend {
		t.Errorf("exit %d, want 3:\n%s", code, stderr)
	}
	if got := sortedLines(stdout.String()); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("bodies printed %v, want those of the 2 requests running", got)
	}
	if n := js.requests(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	for _, want := range []string{" is not answering (",
		// Which Redis, and no Go internals after the reason.
		`pace: limiter failed: admit job 3: redis redis://` + srv.Addr() + `: quota "default": no answer for 300ms: backend unavailable` + "\n",
		"pace: 2 ok, 0 failed"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestRedisGlobalJobs runs two pace instances sharing --global-jobs 3,
// each allowed -j 4: never more than 3 requests run at once between them.
func TestRedisGlobalJobs(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	js := newJobServer(t, 300*time.Millisecond)
	var waits []func() int
	var stderrs []*syncBuffer
	for i := range 2 {
		_, stderr, wait := startPace(t, numbers(6), "fetch", "-r", "100/s", "-j", "4", "--global-jobs", "3",
			"--redis", "redis://"+srv.Addr(), "--key", "gj", "--summary", "none", "--progress", "never", js.URL+"/"+strconv.Itoa(i)+"/{}")
		waits, stderrs = append(waits, wait), append(stderrs, stderr)
	}
	for i, wait := range waits {
		if code := wait(); code != 0 {
			t.Fatalf("instance %d: exit %d:\n%s", i, code, stderrs[i])
		}
	}
	_, paths, peak := js.counts()
	if len(paths) != 12 {
		t.Errorf("%d paths requested, want 12", len(paths))
	}
	// The server sees a request after its admission and answers before
	// its release, so it can only see fewer at once than were admitted.
	if peak > 3 || peak < 2 {
		t.Errorf("%d requests ran at once, want at most --global-jobs 3 (and more than 1)", peak)
	}
}

// TestRedisFleet: two pace instances, each with its own limiter, share
// one quota through Redis; the admission instants of both job logs
// together keep every rule. (The jobs are requests: pace run in process
// would end threads, which kills the children they started, redis-server
// included; see internal/redistest.)
func TestRedisFleet(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	js := newJobServer(t, 0)
	dir := t.TempDir()
	rules, _ := throttle.ParseRules("6/500ms,10/s")
	var waits []func() int
	var stderrs []*syncBuffer
	var logs []string
	for i := range 2 {
		log := filepath.Join(dir, "jobs"+strconv.Itoa(i)+".log")
		_, stderr, wait := startPace(t, numbers(8), "fetch", "-r", throttle.FormatRules(rules), "-j", "3", "--redis", "redis://"+srv.Addr(),
			"--key", "fleet", "--joblog", log, "--summary", "none", "--progress", "never", js.URL+"/"+strconv.Itoa(i)+"/{}")
		waits, stderrs, logs = append(waits, wait), append(stderrs, stderr), append(logs, log)
	}
	var calls []throttle.Call
	for i, wait := range waits {
		if code := wait(); code != 0 {
			t.Fatalf("instance %d: exit %d:\n%s", i, code, stderrs[i])
		}
		rows := readEntries(t, logs[i])
		if len(rows) != 8 {
			t.Errorf("instance %d: %d rows, want 8", i, len(rows))
		}
		for _, e := range rows {
			calls = append(calls, throttle.Call{At: e.Start, Cost: 1})
		}
	}
	for _, r := range throttle.Check(rules, calls) {
		if r.Violations > 0 {
			t.Errorf("rule %v broken %d times by the fleet (peak %d in a window)", r.Rule, r.Violations, r.Peak)
		}
	}
	if _, paths, _ := js.counts(); len(paths) != 16 {
		t.Errorf("%d paths requested, want 16", len(paths))
	}
}
