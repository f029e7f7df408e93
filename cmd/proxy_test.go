//go:build unix

package cmd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/internal/strictserver"
	"github.com/pace-cli/pace/throttle"
)

// Tests of pace proxy: the command run in process against servers the
// tests start, with clients that are not pace (net/http).

// runningProxy is a pace proxy started by startProxy.
type runningProxy struct {
	url     string
	sigs    chan os.Signal
	done    chan int
	errOut  interface{ String() string }
	stopped bool
	code    int
}

// startProxy runs pace proxy with args in process and waits until it
// listens. --redis= keeps a $PACE_REDIS_URL of the environment out (a test
// that sets the variable with t.Setenv could not run in parallel).
func startProxy(t *testing.T, args ...string) *runningProxy {
	t.Helper()
	ios, out, errOut := testIO("") // written while the test reads them
	sigs := make(chan os.Signal, 2)
	f := &Factory{IOStreams: ios, Signals: sigs}
	portFile := filepath.Join(t.TempDir(), "port")
	p := &runningProxy{sigs: sigs, done: make(chan int, 1), errOut: errOut}
	go func() { p.done <- Execute(f, append([]string{"proxy", "--redis=", "--port-file", portFile}, args...)) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(portFile); err == nil {
			p.url = strings.TrimSpace(string(b))
			break
		}
		select {
		case code := <-p.done:
			t.Fatalf("pace proxy exited %d before listening: %s%s", code, out, errOut)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("pace proxy did not write its port file within 20s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop interrupts the proxy and returns its exit code and stderr.
func (p *runningProxy) stop(t *testing.T) (int, string) {
	t.Helper()
	if !p.stopped {
		p.stopped = true
		p.sigs <- os.Interrupt
		select {
		case p.code = <-p.done:
		case <-time.After(30 * time.Second):
			t.Fatal("pace proxy did not stop within 30s of SIGINT")
		}
	}
	return p.code, p.errOut.String()
}

// newStrict starts a strict server keeping rules.
func newStrict(t *testing.T, rules string) (*strictserver.Server, *httptest.Server) {
	t.Helper()
	rs, err := throttle.ParseRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := strictserver.New(strictserver.Options{Rules: rs, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ss)
	t.Cleanup(srv.Close)
	return ss, srv
}

// judgeProxy judges the refusals of ss, the upstream at srv of proxies
// that kept rules with a fixed margin, by the proxies' job logs
// (judgeRows): a refusal that pace's admissions explain fails the test,
// one that lags beyond the margin explain (a loaded machine) is logged.
// It returns how many times the server accepted each path, and the paths
// it refused, whose clients may have had its 429.
func judgeProxy(t *testing.T, ss *strictserver.Server, srv *httptest.Server, rules string, margin time.Duration, logs ...string) (accepted map[string]int, refused map[string]bool) {
	t.Helper()
	rs, err := throttle.ParseRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	var rows []joblog.Entry
	for _, name := range logs {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		jl, err := joblog.Read(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rows = append(rows, jl.Entries...)
	}
	v, err := judgeRows(rs, margin, srv.URL, rows, ss.Requests())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range v.Faults {
		t.Error(f)
	}
	for _, x := range v.Excused {
		t.Logf("excused by the machine: %s", x)
	}
	accepted, refused = map[string]int{}, map[string]bool{}
	for _, r := range ss.Requests() {
		switch r.Outcome {
		case "accepted":
			accepted[r.Path]++
		case "refused":
			refused[r.Path] = true
		}
	}
	return accepted, refused
}

func TestProxyKeepsTheServersRules(t *testing.T) {
	const rules = "5/s,12/3s"
	ss, srv := newStrict(t, rules)
	// A fixed margin: the first burst dials its connections, and under
	// -race and load the dials spread the arrivals over tens of ms. The
	// adaptive margin now covers a burst's spread (TestMarginTrackerBurst),
	// but only once the burst's lags are seen; this test checks the proxy's
	// admission, not the margin's timing under load. A refusal that lags
	// more than the margin apart explain is logged, not failed (judgeProxy).
	const margin = 300 * time.Millisecond
	logFile := filepath.Join(t.TempDir(), "proxy.log")
	p := startProxy(t, "--upstream", srv.URL, "-r", rules, "-j", "8", "--margin", margin.String(), "--joblog", logFile)
	const n = 15
	var wg sync.WaitGroup
	codes := make([]int, n)
	bodies := make([]string, n)
	for i := range n {
		wg.Go(func() {
			resp, err := http.Get(p.url + "/item/" + strconv.Itoa(i))
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			codes[i], bodies[i] = resp.StatusCode, string(b)
		})
	}
	wg.Wait()
	code, errOut := p.stop(t)
	if code != ExitInterrupted {
		t.Errorf("exit %d after SIGINT, want %d", code, ExitInterrupted)
	}
	accepted, refused := judgeProxy(t, ss, srv, rules, margin, logFile)
	for i := range n {
		path := "/item/" + strconv.Itoa(i)
		switch {
		case codes[i] == 200 && bodies[i] == path+"\n" && accepted[path] == 1:
		case codes[i] == http.StatusTooManyRequests && refused[path] && accepted[path] == 0:
		default:
			t.Errorf("request %d: %d %q, the server accepted it %d times; want 200 with its path, accepted once (or the server's 429, after a refusal)",
				i, codes[i], bodies[i], accepted[path])
		}
	}
	rs, _ := throttle.ParseRules(rules)
	for _, r := range throttle.Check(rs, ss.Calls()) {
		if r.Violations > 0 {
			t.Errorf("rule %v broken %d times at the server", r.Rule, r.Violations)
		}
	}
	if len(refused) > 0 {
		return // the summary counts the 429s too
	}
	if !strings.Contains(errOut, "pace: 15 ok, 0 failed, 0 retried in ") || !strings.Contains(errOut, "responses   200 ×15;") ||
		!strings.Contains(errOut, "proxy       15 requests received\n") {
		t.Errorf("stderr lacks the summary line:\n%s", errOut)
	}
}

func TestProxyClientGoneWhileWaitingSpendsNothing(t *testing.T) {
	// A request with a body is served by net/http, which sees its client
	// go only once the body has been read: the proxy reads a small one
	// before the wait. Each case waits 2s for its rule: side by side.
	t.Parallel()
	for _, tc := range []struct {
		name, method string
		body         string
		chunked      bool
	}{
		{"GET", "GET", "", false},
		{"POST", "POST", `{"name":"x"}`, false},
		{"PUT chunked", "PUT", "a body of unknown length", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testClientGoneWhileWaiting(t, tc.method, tc.body, tc.chunked)
		})
	}
}

func testClientGoneWhileWaiting(t *testing.T, method, body string, chunked bool) {
	ss, srv := newStrict(t, "") // the proxy's rule only: what matters is when the third goes
	p := startProxy(t, "--upstream", srv.URL, "-r", "1/2s")
	send := func(ctx context.Context, path string) (int, error) {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
			if chunked {
				rd = io.MultiReader(rd) // no length known: sent chunked
			}
		}
		req, _ := http.NewRequestWithContext(ctx, method, p.url+path, rd)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	if code, err := send(context.Background(), "/first"); code != 200 {
		t.Fatalf("first request: %d, %v", code, err)
	}
	// The second waits for the rule, and gives up.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := send(ctx, "/gone")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second request: %v, want the client's deadline", err)
	}
	// The third goes one window after the first: the second spent nothing.
	if code, err := send(context.Background(), "/third"); code != 200 {
		t.Fatalf("third request: %d, %v", code, err)
	}
	calls := ss.Calls()
	if len(calls) != 2 {
		t.Fatalf("server saw %d arrivals, want 2 (the one that gave up never went)", len(calls))
	}
	if gap := calls[1].At.Sub(calls[0].At); gap > 3500*time.Millisecond {
		t.Errorf("third request arrived %v after the first, want about 2s: the request that gave up spent a call", gap)
	}
	_, errOut := p.stop(t)
	if !strings.Contains(errOut, "1 gone while waiting") {
		t.Errorf("summary does not count the client gone while waiting:\n%s", errOut)
	}
}

func TestProxyMaxWaitAnswers429WithRetryAfter(t *testing.T) {
	ss, srv := newStrict(t, "1/1m")
	p := startProxy(t, "--upstream", srv.URL, "-r", "1/1m", "--max-wait", "1s")
	resp, err := http.Get(p.url + "/a")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", resp, err)
	}
	resp.Body.Close()
	start := time.Now()
	resp, err = http.Get(p.url + "/b")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second request: %d %s, want 429", resp.StatusCode, b)
	}
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || ra < 50 || ra > 61 {
		t.Errorf("Retry-After %q, want about 60 seconds (the rule's window)", resp.Header.Get("Retry-After"))
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("the 429 came after %v: a wait known to be too long is refused at once", waited)
	}
	if st := ss.Stats(); st.Accepted != 1 || st.Refused != 0 {
		t.Errorf("server accepted %d, refused %d; want 1 and 0", st.Accepted, st.Refused)
	}
	_, errOut := p.stop(t)
	if !strings.Contains(errOut, "proxy      2 requests received; sent nowhere: 1 answered 429 (the wait too long)") {
		t.Errorf("summary does not count the 429:\n%s", errOut)
	}
}

func TestProxyCredentialsPassUntouchedAndNeverShow(t *testing.T) {
	const token, qsecret = "s3cr3t-bearer-7f3a9", "qs-secret-c41d2"
	var mu sync.Mutex
	var got *http.Request
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.URL.Path == "/v1/fail" {
			mu.Unlock()
			http.Error(w, "failed", 500)
			return
		}
		got = r.Clone(context.Background())
		mu.Unlock()
		io.WriteString(w, "ok\n")
	}))
	defer up.Close()
	dir := t.TempDir()
	logFile, sumFile := filepath.Join(dir, "proxy.log"), filepath.Join(dir, "sum.json")
	p := startProxy(t, "--upstream", up.URL+"/v1", "-r", "100/s", "-v", "--joblog", logFile, "--summary-file", sumFile)
	// A failed request: its URL is in the summary's failed items too.
	fail, _ := http.NewRequest("GET", p.url+"/fail?api_key="+qsecret, nil)
	fail.Header.Set("X-Api-Key", token)
	if resp, err := http.DefaultClient.Do(fail); err != nil || resp.StatusCode != 500 {
		t.Fatalf("failing request: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	req, _ := http.NewRequest("GET", p.url+"/items?token="+qsecret+"&page=2", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Cookie", "session="+token)
	req.Header.Set("X-Forwarded-For", "10.9.8.7")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("request: %v %v", resp, err)
	}
	resp.Body.Close()
	mu.Lock()
	r := got
	mu.Unlock()
	if r == nil {
		t.Fatal("the upstream got nothing")
	}
	if a := r.Header.Get("Authorization"); a != "Bearer "+token {
		t.Errorf("upstream got Authorization %q", a)
	}
	if c := r.Header.Get("Cookie"); c != "session="+token {
		t.Errorf("upstream got Cookie %q", c)
	}
	if r.URL.Path != "/v1/items" || r.URL.Query().Get("token") != qsecret || r.URL.Query().Get("page") != "2" {
		t.Errorf("upstream got %s, want /v1/items?token=...&page=2", r.URL)
	}
	if host := strings.TrimPrefix(up.URL, "http://"); r.Host != host {
		t.Errorf("upstream got Host %q, want %q", r.Host, host)
	}
	if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
		t.Errorf("upstream got X-Forwarded-For %q, want none", xff)
	}
	_, errOut := p.stop(t)
	if strings.Contains(errOut, token) || strings.Contains(errOut, qsecret) {
		t.Errorf("a credential shows on stderr:\n%s", errOut)
	}
	if !strings.Contains(errOut, "GET '"+up.URL+"/v1/items?token=REDACTED&page=2'") {
		t.Errorf("-v does not log the request:\n%s", errOut)
	}
	for _, name := range []string{logFile, sumFile} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), token) || strings.Contains(string(b), qsecret) {
			t.Errorf("a credential shows in %s:\n%s", filepath.Base(name), b)
		}
		if !strings.Contains(string(b), up.URL+"/v1/fail?api_key=REDACTED") {
			t.Errorf("%s does not name the failed request:\n%s", filepath.Base(name), b)
		}
	}
}

func TestProxyUpstreamDownOrSlow(t *testing.T) {
	// A port where nothing listens: 502.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	p := startProxy(t, "--upstream", dead+"/x?api_key=k3y-s3cret")
	resp, err := http.Get(p.url + "/y")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.HasPrefix(string(b), "pace proxy: ") || len(b) > 200 {
		t.Errorf("upstream down: %d %q, want 502 with a short body", resp.StatusCode, b)
	}
	_, errOut := p.stop(t)
	if strings.Contains(errOut, "k3y-s3cret") {
		t.Errorf("the upstream's API key shows on stderr:\n%s", errOut)
	}

	// An upstream that does not answer within --timeout: 504.
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	p = startProxy(t, "--upstream", slow.URL, "--timeout", "200ms")
	resp, err = http.Get(p.url + "/z")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("slow upstream: %d, want 504", resp.StatusCode)
	}
	if _, errOut := p.stop(t); !strings.Contains(errOut, "0 ok, 1 failed") || !strings.Contains(errOut, "no response ×1 (timeout ×1)") {
		t.Errorf("summary does not count the failure:\n%s", errOut)
	}
}

func TestProxyRunsTheCommandAndExitsWithItsStatus(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	_, srv := newStrict(t, "")
	ios, _, out, errOut := Test()
	f := &Factory{IOStreams: ios, Signals: make(chan os.Signal)}
	code := Execute(f, []string{"proxy", "--upstream", srv.URL, "-r", "10/s", "--",
		"sh", "-c", `case "$PACE_PROXY_URL" in http://127.0.0.1:*) exit 7;; esac; exit 1`})
	if code != 7 {
		t.Errorf("exit %d, want the command's 7; stderr:\n%s", code, errOut)
	}
	if out.Len() != 0 {
		t.Errorf("stdout %q: with a command, the URL is in $PACE_PROXY_URL only", out)
	}
}

// With -q and a command, a request that failed still shows the summary:
// the exit status is the command's, so it cannot say so.
func TestProxyQuietCommandShowsFailures(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not found: it is the command's client here")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	ios, _, _, errOut := Test()
	f := &Factory{IOStreams: ios, Signals: make(chan os.Signal)}
	code := Execute(f, []string{"proxy", "-q", "--upstream", dead, "--", "sh", "-c", `curl -s -o /dev/null "$PACE_PROXY_URL/y"`})
	if code != 0 || !strings.Contains(errOut.String(), "0 ok, 1 failed") {
		t.Errorf("exit %d, stderr %q; want the command's 0 and a summary counting the failure", code, errOut)
	}
}

func TestProxyUsageErrors(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy"}, "pace proxy needs --upstream URL"},
		{[]string{"proxy", "--upstream", "ftp://x"}, `invalid argument "ftp://x" for "--upstream": want an http:// or https:// URL`},
		{[]string{"proxy", "--upstream", "https://u:pw@x"}, "credentials in the URL are not sent"},
		{[]string{"proxy", "--upstream", "http://x", "--listen", "0.0.0.0:0"}, "--listen 0.0.0.0:0 is not a loopback address"},
		{[]string{"proxy", "--upstream", "http://x", "--listen", ":8080"}, "--listen :8080 is not a loopback address"},
		{[]string{"proxy", "--upstream", "http://x", "--listen", "nonsense"}, `invalid argument "nonsense" for "--listen"`},
		{[]string{"proxy", "--upstream", "http://x", "-j", "-1"}, `invalid argument -1 for "-j"`},
		{[]string{"proxy", "--upstream", "http://x", "--client-timeout", "-1s"}, `invalid argument -1s for "--client-timeout"`},
		{[]string{"proxy", "--upstream", "http://x", "--cost", "2"}, "--cost gives each request a cost, but no --cost-rate"},
		// Found before the proxy serves, not when it stops.
		{[]string{"proxy", "--upstream", "http://x", "--joblog", "same", "--summary-file", "same"}, "--joblog and --summary-file both name same"},
		{[]string{"proxy", "--upstream", "http://x", "--joblog", "same", "--port-file", "same"}, "--port-file and --joblog both name same"},
		{[]string{"proxy", "--upstream", "http://x", "--summary-file", "/proc/nope/x"}, "--summary-file /proc/nope/x"},
	} {
		ios, _, _, errOut := Test()
		code := Execute(&Factory{IOStreams: ios}, tt.args)
		if code != ExitUsage || !strings.Contains(errOut.String(), tt.want) {
			t.Errorf("pace %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tt.args, " "), code, errOut, tt.want)
		}
		if strings.Contains(errOut.String(), "pw@") {
			t.Errorf("pace %s: the password shows: %s", strings.Join(tt.args, " "), errOut)
		}
	}
}

// Clients that stall hold no slot past --client-timeout: one that stops
// sending a body already sent upstream gets 408, its request a failed
// row in the job log (-1) that -v explains; one that stops before its
// request was sent gets 408 and spends nothing (the summary counts it);
// a request behind them goes, with -j 1.
func TestProxyClientTimeoutFreesStalledSlots(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		io.WriteString(w, strconv.FormatInt(n, 10))
	}))
	defer up.Close()
	dir := t.TempDir()
	logFile, sumFile := filepath.Join(dir, "proxy.log"), filepath.Join(dir, "sum.json")
	p := startProxy(t, "--upstream", up.URL, "-j", "1", "--client-timeout", "300ms", "-v", "--joblog", logFile, "--summary-file", sumFile)
	for _, head := range []string{
		"POST /sent HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + strings.Repeat("x", 100<<10),
		"POST /unsent HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc",
	} {
		c, err := net.Dial("tcp", strings.TrimPrefix(p.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		io.WriteString(c, head) // and then nothing
		b, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(b), "HTTP/1.1 408 ") || !strings.Contains(string(b), "--client-timeout") {
			t.Errorf("a stalled body: %q, want 408 saying why", b)
		}
	}
	resp, err := http.Get(p.url + "/after")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a GET behind the stalled ones: %v %v", resp, err)
	}
	resp.Body.Close()
	code, errOut := p.stop(t)
	if code != ExitInterrupted || !strings.Contains(errOut, "1 ok, 1 failed") || !strings.Contains(errOut, "1 answered 408 (the body stalled)") ||
		!strings.Contains(errOut, "the client stopped sending its request body: no byte of it came for 300ms") {
		t.Errorf("exit %d, stderr:\n%s\nwant 1 ok, 1 failed, 1 answered 408, and -v saying why", code, errOut)
	}
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`\t-1\t0\tPOST `+regexp.QuoteMeta(up.URL)+`/sent\n`).Match(log) || strings.Contains(string(log), "/unsent") {
		t.Errorf("job log:\n%s\nwant a failed row for /sent, none for /unsent", log)
	}
	if sum := readSummaryFile(t, sumFile); sum.Proxy == nil || sum.Proxy.Stalled != 1 || sum.Failed != 1 {
		t.Errorf("summary file: %+v, want 1 failed and proxy.stalled_408 1", sum)
	}
}

func TestProxySlotsComeBackAndMaxWaitCoversTheSlotWait(t *testing.T) {
	// An upstream that sends the start of a body, then holds the rest
	// until its client goes.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/quick" {
			io.WriteString(w, "quick\n")
			return
		}
		io.WriteString(w, "start\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer up.Close()
	p := startProxy(t, "--upstream", up.URL, "-j", "1", "--max-wait", "300ms")

	// The first request holds the only slot while its body streams.
	resp, err := http.Get(p.url + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 6)
	if _, err := io.ReadFull(resp.Body, line); err != nil || string(line) != "start\n" {
		t.Fatalf("streamed body: %q, %v; want the start before the end", line, err)
	}
	// The second waits for the slot past --max-wait: 429 with Retry-After.
	r2, err := http.Get(p.url + "/quick")
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusTooManyRequests || r2.Header.Get("Retry-After") == "" {
		t.Errorf("while the slot is held: %d, Retry-After %q; want 429 with one", r2.StatusCode, r2.Header.Get("Retry-After"))
	}
	// The first client goes mid-response: its slot comes back at once.
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r3, err := http.Get(p.url + "/quick")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r3.Body)
		r3.Body.Close()
		if r3.StatusCode == 200 && string(b) == "quick\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot of a client gone mid-response never came back: %d %q", r3.StatusCode, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProxiesSharingAKeyKeepOneQuota(t *testing.T) {
	const rules = "4/s,6/2s"
	ss, srv := newStrict(t, rules)
	state := t.TempDir()
	// A fixed margin, as in TestProxyKeepsTheServersRules, and refusals
	// judged the same way.
	const margin = 300 * time.Millisecond
	args := []string{"--upstream", srv.URL, "-r", rules, "--key", "shared", "--state", state, "--margin", margin.String()}
	logA, logB := filepath.Join(state, "a.log"), filepath.Join(state, "b.log")
	a, b := startProxy(t, append(args, "--joblog", logA)...), startProxy(t, append(args, "--joblog", logB)...)
	const n = 10
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		base := a.url
		if i%2 == 1 {
			base = b.url
		}
		wg.Go(func() {
			resp, err := http.Get(base + "/" + strconv.Itoa(i))
			if err != nil {
				t.Errorf("request %d: %v", i, err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	a.stop(t)
	b.stop(t)
	accepted, refused := judgeProxy(t, ss, srv, rules, margin, logA, logB)
	for i := range n {
		path := "/" + strconv.Itoa(i)
		if !(codes[i] == 200 && accepted[path] == 1 || codes[i] == http.StatusTooManyRequests && refused[path] && accepted[path] == 0) {
			t.Errorf("request %d: %d, the server accepted it %d times; want 200, accepted once (or the server's 429, after a refusal)", i, codes[i], accepted[path])
		}
	}
}

// TestProxyReportsAsARunDoes: metrics while it serves, status lines with
// the requests waiting, and on SIGINT the request in flight finishes
// within --grace, then the job log has its row and the summary counts it.
func TestProxyReportsAsARunDoes(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			w.WriteHeader(200)
			io.WriteString(w, "first half ")
			w.(http.Flusher).Flush()
			<-release
		}
		io.WriteString(w, r.URL.Path+"\n")
	}))
	defer up.Close()
	dir := t.TempDir()
	logFile, sumFile := filepath.Join(dir, "proxy.log"), filepath.Join(dir, "sum.json")
	p := startProxy(t, "--upstream", up.URL, "-r", "100/s", "--grace", "20s", "--joblog", logFile, "--summary-file", sumFile,
		"--metrics-addr", "127.0.0.1:0", "--progress", "lines", "--progress-interval", "1s")
	for i := range 3 {
		resp, err := http.Get(p.url + "/" + strconv.Itoa(i))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("request %d: %v %v", i, resp, err)
		}
		resp.Body.Close()
	}
	slow := make(chan string, 1)
	go func() {
		resp, err := http.Get(p.url + "/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		slow <- string(b)
	}()
	re := regexp.MustCompile(`pace: metrics at (http://127\.0\.0\.1:\d+/metrics)\n`)
	var url string
	waitFor(t, "the metrics address on stderr", func() bool {
		m := re.FindStringSubmatch(p.errOut.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	waitFor(t, "3 ok and 1 in flight in the metrics", func() bool {
		m := scrape(t, url)
		return m[`pace_calls_total{outcome="ok"}`] == 3 && m["pace_in_flight"] == 1 && m["pace_calls_admitted_total"] == 4
	})
	waitFor(t, "a status line", func() bool {
		return regexp.MustCompile(`(?m)^pace: 3 done, 0 waiting, `).MatchString(p.errOut.String())
	})
	p.sigs <- os.Interrupt
	waitFor(t, "the interrupt's message", func() bool {
		return strings.Contains(p.errOut.String(), "pace: SIGINT: accepting no more requests; waiting up to 20s for 1 running")
	})
	close(release)
	if got := <-slow; got != "first half /slow\n" {
		t.Errorf("the request in flight got %q, want its whole answer", got)
	}
	code, errOut := p.stop(t)
	if code != ExitInterrupted {
		t.Errorf("exit %d, want %d\n%s", code, ExitInterrupted, errOut)
	}
	log, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(string(log), "\tGET "+up.URL+"/"); rows != 4 || !strings.Contains(string(log), "\tGET "+up.URL+"/slow\n") {
		t.Errorf("job log has %d request rows, want 4 with /slow:\n%s", rows, log)
	}
	sum := readSummaryFile(t, sumFile)
	if sum.OK != 4 || sum.Attempts != 4 || sum.Proxy == nil || sum.Proxy.Requests != 4 || sum.Interrupted == nil || *sum.Interrupted != "SIGINT" {
		t.Errorf("summary file: %+v", sum)
	}
}

// An upstream that is the proxy itself (--listen's address) is refused
// before anything is served: each request would come back to the proxy,
// admitted again, without end (one client request made 100 calls in 8s
// under 20/s, each spending the quota, until pace was stopped).
func TestProxyUpstreamItselfIsRefused(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	ln.Close()
	ios, _, _, errOut := Test()
	done := make(chan int, 1)
	go func() {
		done <- Execute(&Factory{IOStreams: ios}, []string{"proxy", "--listen", addr, "--upstream", "http://localhost:" + port + "/v1"})
	}()
	select {
	case code := <-done:
		want := "--upstream http://localhost:" + port + "/v1 is this proxy itself"
		if code != ExitUsage || !strings.Contains(errOut.String(), want) {
			t.Errorf("pace proxy --listen %s --upstream http://localhost:%s/v1: exit %d, stderr %q; want exit 2 and %q", addr, port, code, errOut, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("pace proxy --listen %s --upstream http://localhost:%s/v1 serves: it should refuse to send requests to itself", addr, port)
	}
}
