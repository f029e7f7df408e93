package cmd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/redistest"
)

// Tests of pace against a Redis that goes silent: a redis-server stopped
// with SIGSTOP keeps its connections, accepts new ones and answers nothing
// until it is continued. go-redis's read timeout is 20 s in the URLs here,
// so a wait that lasted for it would be plain.

// promptly is how soon after Ctrl-C pace must have ended: well short of
// the 20 s read timeout (and of the 5 s pace exec -v gives its look at the
// quota), generous for a loaded machine (pace itself takes a second at
// most, to give its slots back).
const promptly = 3 * time.Second

// startPaceSignals is startPace with sigs as the signals pace receives.
func startPaceSignals(t *testing.T, sigs <-chan os.Signal, stdin string, args ...string) (stdout, stderr *syncBuffer, wait func() int) {
	ios, out, errOut := testIO(stdin)
	done := make(chan int, 1)
	go func() { done <- Execute(&Factory{IOStreams: ios, Signals: sigs}, args) }()
	return out, errOut, func() int {
		select {
		case code := <-done:
			return code
		case <-time.After(60 * time.Second):
			t.Fatalf("pace %q did not finish\n%s", args, errOut)
			return -1
		}
	}
}

// TestRedisExecInterruptWhileSilent: Ctrl-C while pace exec waits for its
// admission from a stopped Redis (or, with -v, for its look at the quota)
// stops it at once, before anything ran.
func TestRedisExecInterruptWhileSilent(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	url := "redis://" + srv.Addr() + "?read_timeout=20s"
	srv.Stop()
	for _, extra := range [][]string{nil, {"--global-jobs", "1"}, {"-v"}} {
		sigs := make(chan os.Signal, 1)
		args := append(append([]string{"exec", "--redis", url, "--key", "silent", "-r", "1/s"}, extra...), "--", "echo", "ran")
		stdout, stderr, wait := startPaceSignals(t, sigs, "", args...)
		time.Sleep(300 * time.Millisecond) // pace waits on Redis by now
		start := time.Now()
		sigs <- os.Interrupt
		code := wait()
		if d := time.Since(start); code != ExitInterrupted || stdout.String() != "" || d > promptly {
			t.Errorf("%q: Ctrl-C while Redis is stopped: exit %d after %v, stdout %q; want 130 at once, nothing run", args, code, d, stdout)
		}
		if want := "pace: SIGINT: stopped before anything ran\n"; !strings.Contains(stderr.String(), want) {
			t.Errorf("%q: stderr %q, want %q", args, stderr, want)
		}
	}
}

// TestRedisInterruptWhileSilentMidRun stops Redis in the middle of a run
// with a fleet-wide cap, a job waiting for a slot, then sends Ctrl-C: the
// wait ends, the requests under way finish and are printed, pace gives its
// slots back (a second at most) and ends with the summary, long before
// go-redis's read timeout.
func TestRedisInterruptWhileSilentMidRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	js := newJobServer(t, 200*time.Millisecond)
	sigs := make(chan os.Signal, 1)
	stdout, stderr, wait := startPaceSignals(t, sigs, numbers(50), "fetch", "-r", "100/s", "-j", "3", "--global-jobs", "2",
		"--redis", "redis://"+srv.Addr()+"?read_timeout=20s", "--key", "silent", "--summary", "text", "--progress", "never", js.URL+"/{}")
	waitFor(t, "2 requests", func() bool { return js.requests() >= 2 })
	srv.Stop()
	time.Sleep(300 * time.Millisecond) // the requests under way end; the next wait on Redis
	start := time.Now()
	sigs <- os.Interrupt
	code := wait()
	if d := time.Since(start); code != ExitInterrupted || d > promptly {
		t.Errorf("Ctrl-C while Redis is stopped mid-run: exit %d after %v, want 130 at once:\n%s", code, d, stderr)
	}
	if n, printed := js.requests(), len(sortedLines(stdout.String())); printed != n {
		t.Errorf("%d bodies printed, want one for each of the %d requests made", printed, n)
	}
	if !strings.Contains(stderr.String(), "interrupted by SIGINT") {
		t.Errorf("no summary saying the run was interrupted:\n%s", stderr)
	}
}

// TestRedisSilentMidRun stops Redis in the middle of a run and continues
// it: no request starts while it is silent, pace says so and says when it
// answers again, and every item runs exactly once. A Redis stopped for
// longer than --redis-timeout ends the run with exit 3.
func TestRedisSilentMidRun(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	js := newJobServer(t, 0)
	// 5 requests at once, then 5 a second later: Redis goes silent in between.
	stdout, stderr, wait := startPace(t, numbers(10), "fetch", "-r", "5/s", "-j", "5", "--redis", "redis://"+srv.Addr()+"?read_timeout=20s",
		"--key", "silent", "--redis-timeout", "20s", "--retries", "0", "--summary", "none", "--progress", "never", js.URL+"/{}")
	waitFor(t, "5 requests", func() bool { return js.requests() >= 5 })
	srv.Stop()
	stopped := time.Now()
	waitFor(t, "pace to see Redis silent", func() bool {
		return strings.Contains(stderr.String(), " is not answering (no reply for ")
	})
	continued := time.Now()
	srv.Continue()
	if code := wait(); code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, stderr)
	}
	checkOutage(t, stdout.String(), stderr.String(), js, stopped, continued)

	// Silent for longer than --redis-timeout: exit 3, saying so.
	start := time.Now()
	srv.Stop()
	code, _, errOut := execPace(t, numbers(3), "fetch", "-r", "5/s", "--redis", "redis://"+srv.Addr()+"?read_timeout=20s",
		"--key", "silent2", "--redis-timeout", "300ms", "--summary", "none", "--progress", "never", js.URL+"/{}")
	srv.Continue()
	if d := time.Since(start); code != ExitBackend || d > promptly {
		t.Errorf("a Redis silent past --redis-timeout 300ms: exit %d after %v, want 3 soon after the timeout:\n%s", code, d, errOut)
	}
	if want := `no answer for 300ms: backend unavailable`; !strings.Contains(errOut, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut)
	}
}

// TestRedisQuotaInterruptWhileSilent: Ctrl-C while pace quota show or
// reset waits for a stopped Redis stops it at once; an interrupted reset
// says that it may still happen.
func TestRedisQuotaInterruptWhileSilent(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	url := "redis://" + srv.Addr() + "?read_timeout=20s"
	srv.Stop()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"quota", "show", "--redis", url, "--key", "silent"}, "pace: SIGINT: stopped before redis " + url + " answered\n"},
		{[]string{"quota", "reset", "--yes", "--redis", url, "--key", "silent"},
			`pace: SIGINT: stopped before Redis answered: quota "silent" in redis ` + url + " may still be reset once it does (pace quota show tells)\n"},
	} {
		sigs := make(chan os.Signal, 1)
		_, stderr, wait := startPaceSignals(t, sigs, "", tt.args...)
		time.Sleep(300 * time.Millisecond) // pace waits on Redis by now
		start := time.Now()
		sigs <- os.Interrupt
		code := wait()
		if d := time.Since(start); code != ExitInterrupted || d > promptly {
			t.Errorf("%q: Ctrl-C while Redis is stopped: exit %d after %v; want 130 at once", tt.args, code, d)
		}
		if stderr.String() != tt.want {
			t.Errorf("%q: stderr %q, want %q", tt.args, stderr, tt.want)
		}
	}
}

// TestRedisQuotaSilent: pace quota show and reset against a stopped Redis
// give up once their time is out, with exit 3 and a message that says
// Redis did not answer (not Go's "context deadline exceeded").
func TestRedisQuotaSilent(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	url := "redis://" + srv.Addr() + "?read_timeout=20s"
	srv.Stop()
	for _, action := range []string{"show", "reset"} {
		ios, _, errOut := testIO("")
		opts := &QuotaOptions{IO: ios, Action: action, Key: "silent", RedisURL: url, Yes: true, timeout: 300 * time.Millisecond}
		err := quotaRun(context.Background(), opts)
		var exit *ExitError
		if !errors.As(err, &exit) || exit.Code != ExitBackend {
			t.Errorf("pace quota %s with Redis stopped = %v, want exit 3", action, err)
		}
		if want := "pace: redis " + url + `: quota "silent": no answer for 300ms` + "\n"; errOut.String() != want {
			t.Errorf("pace quota %s with Redis stopped: stderr %q, want %q", action, errOut, want)
		}
	}
}

// TestRedisInterruptCorrectionWhileSilent: a response that tells the
// call's cost comes back once Redis is stopped; the correction waits for
// Redis as admissions do, and the second Ctrl-C (kill) ends that wait at
// once instead of after --redis-timeout.
func TestRedisInterruptCorrectionWhileSilent(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	arrived, answer := make(chan struct{}, 10), make(chan struct{})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-answer
		w.Header().Set("X-Cost", "3")
		fmt.Fprintln(w, "ok")
	}))
	defer api.Close()
	defer close(answer)
	sigs := make(chan os.Signal, 2)
	_, stderr, wait := startPaceSignals(t, sigs, numbers(5), "fetch", "--cost-rate", "100/s", "--cost-from-response", "header:X-Cost",
		"-j", "1", "--redis", "redis://"+srv.Addr()+"?read_timeout=20s", "--redis-timeout", "20s", "--key", "silent",
		"--summary", "text", "--progress", "never", api.URL+"/{}")
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no request came")
	}
	srv.Stop()
	sigs <- os.Interrupt // no more jobs; the one under way goes on
	answer <- struct{}{}
	time.Sleep(300 * time.Millisecond) // its correction waits on Redis by now
	start := time.Now()
	sigs <- os.Interrupt
	code := wait()
	if d := time.Since(start); code != ExitInterrupted || d > promptly {
		t.Errorf("second Ctrl-C while a correction waits on a stopped Redis: exit %d after %v, want 130 at once:\n%s", code, d, stderr)
	}
}
