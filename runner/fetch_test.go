package runner

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/strictserver"
	"github.com/pace-cli/pace/throttle"
)

// pauseCall is one PauseUntil a fakePauser received.
type pauseCall struct {
	until  time.Time
	reason string
}

// fakePauser records PauseUntil calls.
type fakePauser struct {
	mu    sync.Mutex
	calls []pauseCall
}

func (p *fakePauser) PauseUntil(t time.Time, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, pauseCall{t, reason})
}

func (p *fakePauser) list() []pauseCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// setClock is a Clock whose time the test sets.
type setClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *setClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *setClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func newFetch(t *testing.T, opts FetchOptions) *FetchExecutor {
	t.Helper()
	if opts.Client == nil {
		opts.Client = NewHTTPClient(HTTPClientOptions{Conns: 4})
	}
	e, err := NewFetchExecutor(opts)
	if err != nil {
		t.Fatalf("NewFetchExecutor: %v", err)
	}
	return e
}

// fetchOne prepares and executes one job for item.
func fetchOne(t *testing.T, e *FetchExecutor, item string) *Result {
	t.Helper()
	return fetchCtx(t, context.Background(), e, item, 1)
}

func fetchCtx(t *testing.T, ctx context.Context, e *FetchExecutor, item string, seq int64) *Result {
	t.Helper()
	job := Job{Seq: seq, Item: item, Attempt: 1, Slot: 1}
	if err := e.Prepare(&job); err != nil {
		t.Fatalf("Prepare(%q): %v", item, err)
	}
	res := e.Execute(ctx, &job)
	t.Cleanup(func() { res.Close() })
	if res.HTTP == nil {
		t.Fatalf("Execute(%q): Result.HTTP is nil", item)
	}
	return res
}

// seen is what a recording handler saw of one request.
type seen struct {
	method, path, host, body string
	header                   http.Header
}

// reqRecorder is a handler that records requests and answers with reply.
type reqRecorder struct {
	mu    sync.Mutex
	reqs  []seen
	reply func(w http.ResponseWriter, r *http.Request)
}

func (rec *reqRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, seen{r.Method, r.URL.RequestURI(), r.Host, string(body), r.Header.Clone()})
	rec.mu.Unlock()
	if rec.reply != nil {
		rec.reply(w, r)
		return
	}
	io.WriteString(w, "body of "+r.URL.Path+"\n")
}

func (rec *reqRecorder) all() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.reqs)
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchGetsBodyAndSetsArgv(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	e := newFetch(t, FetchOptions{UserAgent: "pace/test"})
	job := Job{Seq: 7, Item: srv.URL + "/a/b?x=1", Attempt: 1, Slot: 1}
	if err := e.Prepare(&job); err != nil {
		t.Fatal(err)
	}
	if want := []string{"GET", srv.URL + "/a/b?x=1"}; !slices.Equal(job.Argv, want) {
		t.Errorf("Argv = %q, want %q", job.Argv, want)
	}
	res := e.Execute(context.Background(), &job)
	defer res.Close()
	if !res.OK() || res.ExitCode != 0 {
		t.Fatalf("Execute: OK = false (%s), want success", res.Status())
	}
	if got := string(res.Stdout.Bytes()); got != "body of /a/b\n" {
		t.Errorf("Stdout = %q, want %q", got, "body of /a/b\n")
	}
	h := res.HTTP
	if h.StatusCode != 200 || h.Status != "200 OK" || h.Bytes != 13 || h.Method != "GET" || h.Proto != "HTTP/1.1" {
		t.Errorf("HTTP = %+v, want 200, 13 bytes", h)
	}
	if ua := rec.all()[0].header.Get("User-Agent"); ua != "pace/test" {
		t.Errorf("User-Agent = %q, want pace/test", ua)
	}
}

func TestFetchTemplateHeadersAndData(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	e := newFetch(t, FetchOptions{
		URL:       srv.URL + "/items/{}?n={#}",
		Headers:   []string{"X-Item: id-{}", "X-Slot:{%}", "Accept: application/json", "Accept: text/plain", "Host: api.example.test", "User-Agent: mine/1"},
		Data:      `{"id":"{}"}`,
		HasData:   true,
		UserAgent: "pace/test",
	})
	res := fetchCtx(t, context.Background(), e, "42", 3)
	if !res.OK() {
		t.Fatalf("Execute: %s", res.Status())
	}
	got := rec.all()[0]
	want := seen{method: "POST", path: "/items/42?n=3", host: "api.example.test", body: `{"id":"42"}`}
	if got.method != want.method || got.path != want.path || got.host != want.host || got.body != want.body {
		t.Errorf("request = %s %s host %s body %q, want %s %s host %s body %q",
			got.method, got.path, got.host, got.body, want.method, want.path, want.host, want.body)
	}
	for name, want := range map[string]string{
		"X-Item": "id-42", "X-Slot": "1", "User-Agent": "mine/1",
		"Content-Type": "application/x-www-form-urlencoded",
	} {
		if v := got.header.Get(name); v != want {
			t.Errorf("header %s = %q, want %q", name, v, want)
		}
	}
	if v := got.header.Values("Accept"); !slices.Equal(v, []string{"application/json", "text/plain"}) {
		t.Errorf("Accept = %q, want both values in order", v)
	}
}

func TestFetchRejectsLineBreaksInHeaders(t *testing.T) {
	e := newFetch(t, FetchOptions{URL: "http://h/x", Headers: []string{"X-Item: {}"}})
	job := Job{Seq: 4, Item: "a\r\nX-Injected: 1", Attempt: 1, Slot: 1}
	if err := e.Prepare(&job); !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "header X-Item") {
		t.Errorf("Prepare(item with CRLF) = %v, want a permanent header error", err)
	}
}

func TestFetchShowItem(t *testing.T) {
	plain := newFetch(t, FetchOptions{URL: "http://h/{}", Headers: []string{"Authorization: Bearer fixed-{#}"}})
	if got := plain.ShowItem("https://u:p@h/x"); got != "https://REDACTED@h/x" {
		t.Errorf("ShowItem(URL with userinfo) = %q, want it redacted", got)
	}
	if got := plain.ShowItem("42"); got != "42" {
		t.Errorf("ShowItem(42) = %q, want 42", got)
	}
	secret := newFetch(t, FetchOptions{URL: "http://h/x", Headers: []string{"Authorization: Bearer {}"}})
	if got := secret.ShowItem("tok-123"); got != Redacted {
		t.Errorf("ShowItem(item used as a token) = %q, want %q", got, Redacted)
	}
}

func TestFetchEmptyUserAgentSendsNone(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	e := newFetch(t, FetchOptions{Headers: []string{"User-Agent:"}, UserAgent: "pace/test"})
	fetchOne(t, e, srv.URL)
	if _, ok := rec.all()[0].header["User-Agent"]; ok {
		t.Errorf("User-Agent = %q, want none", rec.all()[0].header.Get("User-Agent"))
	}
}

func TestFetchDataFromFile(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	dir := t.TempDir()
	file := filepath.Join(dir, "doc {1}.json")
	content := strings.Repeat(`{"k":"{}"}`, 1000) // placeholders in the file are not expanded
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newFetch(t, FetchOptions{
		URL: srv.URL + "/upload/{/.}", Method: "PUT", Data: "@{}", HasData: true,
		Headers: []string{"Content-Type: application/json"},
	})
	res := fetchOne(t, e, file)
	if !res.OK() {
		t.Fatalf("Execute: %s", res.Status())
	}
	got := rec.all()[0]
	if got.method != "PUT" || got.body != content || got.header.Get("Content-Type") != "application/json" {
		t.Errorf("request = %s, %d bytes, %s; want PUT, %d bytes, application/json",
			got.method, len(got.body), got.header.Get("Content-Type"), len(content))
	}

	job := Job{Seq: 2, Item: filepath.Join(dir, "missing"), Attempt: 1, Slot: 1}
	err := e.Prepare(&job)
	if !errors.Is(err, ErrPermanent) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Prepare(missing data file) = %v, want a permanent not-exist error", err)
	}
}

func TestNewFetchExecutorRejects(t *testing.T) {
	client := NewHTTPClient(HTTPClientOptions{})
	tests := []struct {
		name string
		opts FetchOptions
		want string
	}{
		{"no client", FetchOptions{}, "no HTTP client"},
		{"header without colon", FetchOptions{Client: client, Headers: []string{"X-Foo"}}, `bad header`},
		{"header name with space", FetchOptions{Client: client, Headers: []string{"X Foo: 1"}}, `bad header`},
		{"header name placeholder", FetchOptions{Client: client, Headers: []string{"X-{}: 1"}}, `bad header`},
		{"method", FetchOptions{Client: client, Method: "GE T"}, `bad method "GE T"`},
		{"fixed template", FetchOptions{Client: client, URL: "https://u:pw123@api.example/x"}, "no placeholder"},
		{"data from stdin", FetchOptions{Client: client, Data: "@-", HasData: true}, "stdin"},
	}
	for _, tt := range tests {
		_, err := NewFetchExecutor(tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: NewFetchExecutor = %v, want an error containing %q", tt.name, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw123") {
			t.Errorf("%s: error %q shows the password", tt.name, err)
		}
	}
	// A placeholder in a header or the data is enough to vary a template.
	if _, err := NewFetchExecutor(FetchOptions{Client: client, URL: "https://h/x", Headers: []string{"X-Seq: {#}"}}); err != nil {
		t.Errorf("NewFetchExecutor(fixed URL, varying header) = %v, want nil", err)
	}
	// A bad header's value, which may be a credential, is not shown.
	_, err := NewFetchExecutor(FetchOptions{Client: client, Headers: []string{"Bad Name: topsecret"}})
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("NewFetchExecutor(bad header) = %v, want an error without the value", err)
	}
}

func TestFetchBadURLs(t *testing.T) {
	e := newFetch(t, FetchOptions{})
	tests := []struct{ item, want string }{
		{"example.com/x", "no scheme"},
		{"ftp://alice:hunter22@example.com/x", `unsupported scheme "ftp"`},
		{"localhost:8080/x", `unsupported scheme "localhost"`},
		{"http://[::1/x", "missing ']'"},
		{"http://bob:hunter22@host:port/x", "invalid port"},
		{"http:///path", "no host"},
		{"http:opaque", "want scheme://host"},
		{"http://h/%zz", "invalid URL escape"},
		{"alice:hunter22@example.com/x", "no scheme"},
	}
	for i, tt := range tests {
		job := Job{Seq: int64(i + 1), Item: tt.item, Attempt: 1, Slot: 1}
		err := e.Prepare(&job)
		if !errors.Is(err, ErrBadURL) || !errors.Is(err, ErrPermanent) {
			t.Errorf("Prepare(%q) = %v, want ErrBadURL, permanent", tt.item, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.want) || !strings.HasPrefix(msg, fmt.Sprintf("job %d: bad URL", i+1)) {
			t.Errorf("Prepare(%q) = %q, want \"job %d: bad URL ...%s...\"", tt.item, msg, i+1, tt.want)
		}
		if strings.Contains(msg, "hunter22") || strings.Contains(msg, "alice") {
			t.Errorf("Prepare(%q) = %q, shows credentials", tt.item, msg)
		}
	}
}

func TestFetchBadURLInPoolFailsOnlyThatItem(t *testing.T) {
	srv := serve(t, &reqRecorder{})
	e := newFetch(t, FetchOptions{})
	var mu sync.Mutex
	var done []*Result
	p, err := NewPool(Options{Jobs: 2, Executor: e, OnEvent: func(ev Event) {
		if ev.Kind == JobDone {
			mu.Lock()
			r := *ev.Result
			r.Stdout, r.Stderr = nil, nil
			done = append(done, &r)
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background(), feed(srv.URL+"/1", "nope", srv.URL+"/3")); err != nil {
		t.Fatal(err)
	}
	var ok, bad int
	for _, r := range done {
		switch {
		case r.OK():
			ok++
		case errors.Is(r.Err, ErrBadURL) && r.Start.IsZero():
			bad++
		}
	}
	if ok != 2 || bad != 1 {
		t.Errorf("got %d ok and %d bad URLs (never admitted), want 2 and 1", ok, bad)
	}
}

func TestFetchStatusFailsItem(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(code)
		io.WriteString(w, "error page\n")
	}))
	e := newFetch(t, FetchOptions{})
	tests := []struct {
		code      int
		permanent bool
	}{
		{404, true}, {400, true}, {410, true}, {304, true}, {501, true},
		{408, false}, {429, false}, {500, false}, {502, false}, {503, false}, {504, false},
	}
	for _, tt := range tests {
		res := fetchOne(t, e, srv.URL+"/"+strconv.Itoa(tt.code))
		var se *StatusError
		if res.OK() || !errors.As(res.Err, &se) || se.Code != tt.code || res.ExitCode != 1 {
			t.Errorf("status %d: OK = %v, Err = %v, ExitCode = %d; want a StatusError, exit code 1", tt.code, res.OK(), res.Err, res.ExitCode)
			continue
		}
		if got := errors.Is(res.Err, ErrPermanent); got != tt.permanent {
			t.Errorf("status %d: permanent = %v, want %v", tt.code, got, tt.permanent)
		}
		if res.Stdout.Len() != 0 || res.HTTP.Bytes != 0 {
			t.Errorf("status %d: %d bytes on stdout, want none", tt.code, res.Stdout.Len())
		}
		want := fmt.Sprintf("job 1: GET %s/%d: HTTP %d ", srv.URL, tt.code, tt.code)
		if !strings.HasPrefix(res.Err.Error(), want) {
			t.Errorf("status %d: Err = %q, want prefix %q", tt.code, res.Err, want)
		}
	}
}

func TestFetchErrorBodyIsRedacted(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "bad credentials: %s / %s\n", r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
	}))
	e := newFetch(t, FetchOptions{Headers: []string{"Authorization: Bearer tok-{}-xyz", "X-Api-Key: k3y-{#}"}})
	res := fetchOne(t, e, srv.URL+"/secret")
	stderr := string(res.Stderr.Bytes())
	if strings.Contains(stderr, "tok-") || strings.Contains(stderr, "k3y-1") || !strings.Contains(stderr, Redacted) {
		t.Errorf("Stderr = %q, want the echoed credentials redacted", stderr)
	}
}

func TestFetchLargeBodySpills(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // 256 KiB
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	e := newFetch(t, FetchOptions{SpillLimit: 4 << 10, TempDir: t.TempDir()})
	res := fetchOne(t, e, srv.URL)
	if !res.OK() || !res.Stdout.Spilled() || !bytes.Equal(res.Stdout.Bytes(), body) || res.HTTP.Bytes != int64(len(body)) {
		t.Errorf("OK %v, spilled %v, %d bytes (HTTP.Bytes %d); want the whole %d-byte body, spilled",
			res.OK(), res.Stdout.Spilled(), res.Stdout.Len(), res.HTTP.Bytes, len(body))
	}
}

func TestFetchOutputDir(t *testing.T) {
	srv := serve(t, &reqRecorder{})
	dir := t.TempDir()
	e := newFetch(t, FetchOptions{OutputDir: dir, OutputName: "{/}.txt"})
	res := fetchOne(t, e, srv.URL+"/sub/page1")
	if !res.OK() || res.Stdout != nil {
		t.Fatalf("Execute: %s (stdout %v), want success and no stdout", res.Status(), res.Stdout)
	}
	want := filepath.Join(dir, "page1.txt")
	if res.HTTP.File != want {
		t.Errorf("HTTP.File = %q, want %q", res.HTTP.File, want)
	}
	if b, err := os.ReadFile(want); err != nil || string(b) != "body of /sub/page1\n" {
		t.Errorf("ReadFile = %q, %v; want the body", b, err)
	}
	if fi, err := os.Stat(want); err == nil && fi.Mode().Perm()&0o044 == 0 {
		t.Errorf("mode = %v, want group/other readable under the usual umask", fi.Mode())
	}

	// The default name is the sequence number; subdirectories are made.
	e = newFetch(t, FetchOptions{OutputDir: filepath.Join(dir, "a", "b")})
	fetchCtx(t, context.Background(), e, srv.URL+"/x", 12)
	if _, err := os.Stat(filepath.Join(dir, "a", "b", "12")); err != nil {
		t.Errorf("default name: %v", err)
	}

	// A name leaving the directory fails the item before admission.
	e = newFetch(t, FetchOptions{OutputDir: dir, OutputName: "../{/}"})
	job := Job{Seq: 1, Item: srv.URL + "/evil", Attempt: 1, Slot: 1}
	if err := e.Prepare(&job); !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "output file name") {
		t.Errorf("Prepare(../name) = %v, want a permanent output name error", err)
	}

	// A failed item writes no file.
	e = newFetch(t, FetchOptions{OutputDir: dir, OutputName: "fail-{#}"})
	srv404 := serve(t, http.NotFoundHandler())
	fetchOne(t, e, srv404.URL)
	if _, err := os.Stat(filepath.Join(dir, "fail-1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat(file of a 404) = %v, want not exist", err)
	}
}

// TestFetchOutputDirInterrupted: a body cut short by cancellation leaves
// neither the file nor a temporary file behind.
func TestFetchOutputDirInterrupted(t *testing.T) {
	started := make(chan struct{})
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 64<<10))
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	}))
	dir := t.TempDir()
	e := newFetch(t, FetchOptions{OutputDir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; time.Sleep(20 * time.Millisecond); cancel() }()
	res := fetchCtx(t, ctx, e, srv.URL, 1)
	if res.OK() || res.Err == nil {
		t.Fatalf("Execute = %s, want a failure", res.Status())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("output directory holds %v, want nothing", entries)
	}
}

func TestFetchTimeout(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	e := newFetch(t, FetchOptions{Timeout: 50 * time.Millisecond})
	t0 := time.Now()
	res := fetchOne(t, e, srv.URL)
	if !res.TimedOut || res.OK() || res.Timeout != 50*time.Millisecond {
		t.Errorf("TimedOut = %v, Status %q; want a timeout after 50ms", res.TimedOut, res.Status())
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("Execute took %v, want about the timeout", d)
	}
	if errors.Is(res.Err, ErrPermanent) {
		t.Errorf("timeout is permanent, want it retried")
	}
}

func TestFetchRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		if n == 0 {
			io.WriteString(w, "landed\n")
			return
		}
		http.Redirect(w, r, "/hop/"+strconv.Itoa(n-1), http.StatusFound)
	})
	srv := serve(t, mux)
	e := newFetch(t, FetchOptions{})
	if res := fetchOne(t, e, srv.URL+"/hop/10"); !res.OK() || string(res.Stdout.Bytes()) != "landed\n" {
		t.Errorf("10 redirects: %s, %q; want success", res.Status(), res.Stdout.Bytes())
	}
	u, _ := url.Parse(srv.URL + "/hop/11")
	u.User = url.UserPassword("ann", "pw-9876")
	res := fetchOne(t, e, u.String())
	if res.OK() || !errors.Is(res.Err, errTooManyRedirects) || !errors.Is(res.Err, ErrPermanent) {
		t.Errorf("11 redirects: %v, want a permanent too-many-redirects error", res.Err)
	}
	if msg := res.Err.Error(); strings.Contains(msg, "pw-9876") || strings.Contains(msg, "ann") {
		t.Errorf("11 redirects: error %q shows credentials", msg)
	}

	// No redirects followed: the 3xx itself fails the item.
	e = newFetch(t, FetchOptions{Client: NewHTTPClient(HTTPClientOptions{MaxRedirects: -1})})
	var se *StatusError
	if res := fetchOne(t, e, srv.URL+"/hop/1"); !errors.As(res.Err, &se) || se.Code != http.StatusFound {
		t.Errorf("MaxRedirects -1: %v, want HTTP 302", res.Err)
	}
}

func TestFetchRedirectDropsSecretHeadersOffHost(t *testing.T) {
	other := &reqRecorder{}
	otherSrv := serve(t, other)
	same := &reqRecorder{}
	mux := http.NewServeMux()
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherSrv.URL+"/landing", http.StatusFound)
	})
	mux.HandleFunc("/stay", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/here", http.StatusFound)
	})
	mux.Handle("/here", same)
	srv := serve(t, mux)
	e := newFetch(t, FetchOptions{Headers: []string{
		"Authorization: Bearer abc", "X-Api-Key: k", "Cookie: c=1", "X-Trace: t1",
	}})
	fetchOne(t, e, srv.URL+"/away")
	fetchOne(t, e, srv.URL+"/stay")
	got := other.all()[0].header
	for _, name := range []string{"Authorization", "X-Api-Key", "Cookie"} {
		if v := got.Get(name); v != "" {
			t.Errorf("redirect to another host: %s = %q, want it dropped", name, v)
		}
	}
	if got.Get("X-Trace") != "t1" {
		t.Errorf("redirect to another host: X-Trace = %q, want it kept", got.Get("X-Trace"))
	}
	kept := same.all()[0].header
	if kept.Get("X-Api-Key") != "k" || kept.Get("Authorization") != "Bearer abc" {
		t.Errorf("redirect on the same host: headers %v, want the credentials kept", kept)
	}
}

func TestFetchHTTP2AndTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(&reqRecorder{})
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	e := newFetch(t, FetchOptions{Client: NewHTTPClient(HTTPClientOptions{Conns: 4, TLS: &tls.Config{RootCAs: roots}})})
	if res := fetchOne(t, e, srv.URL+"/h2"); !res.OK() || res.HTTP.Proto != "HTTP/2.0" {
		t.Errorf("TLS with ALPN: %s over %q, want success over HTTP/2.0", res.Status(), res.HTTP.Proto)
	}

	e = newFetch(t, FetchOptions{})
	res := fetchOne(t, e, srv.URL+"/untrusted")
	if res.OK() || !errors.Is(res.Err, ErrPermanent) || !strings.Contains(res.Err.Error(), "certificate") {
		t.Errorf("untrusted certificate: %v, want a permanent certificate error", res.Err)
	}
	e = newFetch(t, FetchOptions{Client: NewHTTPClient(HTTPClientOptions{Insecure: true})})
	if res := fetchOne(t, e, srv.URL+"/insecure"); !res.OK() {
		t.Errorf("Insecure: %s, want success", res.Status())
	}
}

func TestNewHTTPClientPoolAndProxy(t *testing.T) {
	c := NewHTTPClient(HTTPClientOptions{Conns: 32})
	tr := c.Transport.(*http.Transport)
	if tr.MaxIdleConnsPerHost != 32 || tr.Proxy == nil || !tr.ForceAttemptHTTP2 || tr.DisableKeepAlives {
		t.Errorf("transport: idle per host %d, proxy set %v, h2 %v, keep-alive %v; want 32, true, true, true",
			tr.MaxIdleConnsPerHost, tr.Proxy != nil, tr.ForceAttemptHTTP2, !tr.DisableKeepAlives)
	}
}

// TestFetchConnectionReset: a reset fails the attempt with a redacted,
// retryable error, and the pool's retry succeeds.
func TestFetchConnectionReset(t *testing.T) {
	ss, err := strictserver.New(strictserver.Options{ResetFirst: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, ss)
	u, _ := url.Parse(srv.URL + "/r?token=tk-55555")
	u.User = url.UserPassword("carol", "s3cr3t-pw")
	e := newFetch(t, FetchOptions{Headers: []string{"X-Auth-Token: hdr-tok-77"}})
	var mu sync.Mutex
	var finished []string
	var final *Result
	p, _ := NewPool(Options{Jobs: 1, Executor: e, Retries: 1, OnEvent: func(ev Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Kind {
		case JobFinished:
			finished = append(finished, ev.Result.Status())
		case JobDone:
			r := *ev.Result
			final = &r
		}
	}})
	if err := p.Run(context.Background(), feed(u.String())); err != nil {
		t.Fatal(err)
	}
	if len(finished) != 2 || !final.OK() {
		t.Fatalf("attempts %q, final OK %v; want a failure then a success", finished, final.OK())
	}
	for _, secret := range []string{"carol", "s3cr3t-pw", "tk-55555", "hdr-tok-77"} {
		if strings.Contains(finished[0], secret) || strings.Contains(strings.Join(final.Job.Argv, " "), secret) {
			t.Errorf("error %q or argv %q shows %q", finished[0], final.Job.Argv, secret)
		}
	}
}

// TestFetchServerSignals drives the executor's reading of 429/503 and
// rate-limit headers with a fixed clock and a fake pauser.
func TestFetchServerSignals(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	type reply struct {
		code   int
		header []string
	}
	tests := []struct {
		name      string
		replies   []reply
		ignore    bool
		wantPause []time.Duration // one per reply; 0: none
		reason    string          // of the last pause
	}{
		{"429 retry-after seconds", []reply{{429, []string{"Retry-After", "5"}}}, false, []time.Duration{5 * time.Second}, "429 Retry-After: 5"},
		{"503 retry-after date", []reply{{503, []string{"Retry-After", "Sat, 01 Mar 2025 12:00:09 GMT"}}}, false,
			[]time.Duration{9 * time.Second}, "503 Retry-After: Sat, 01 Mar 2025 12:00:09 GMT"},
		{"429 retry-after 0", []reply{{429, []string{"Retry-After", "0"}}}, false, []time.Duration{0}, ""},
		{"retry-after ignored on 500", []reply{{500, []string{"Retry-After", "5"}}}, false, []time.Duration{0}, ""},
		{"429 without retry-after backs off", []reply{{429, nil}}, false, []time.Duration{time.Second}, "429 without Retry-After: backoff 1s"},
		{"429 uses the rate-limit reset", []reply{{429, []string{"RateLimit-Remaining", "0", "RateLimit-Reset", "4"}}}, false,
			[]time.Duration{4 * time.Second}, "RateLimit-Remaining: 0"},
		{"retry-after and reset: the later wins", []reply{{429, []string{"Retry-After", "2", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "6"}}}, false,
			[]time.Duration{6 * time.Second}, "X-RateLimit-Remaining: 0"},
		{"200 quota spent", []reply{{200, []string{"RateLimit-Remaining", "0", "RateLimit-Reset", "3"}}}, false,
			[]time.Duration{3 * time.Second}, "RateLimit-Remaining: 0"},
		{"200 quota left", []reply{{200, []string{"RateLimit-Remaining", "1", "RateLimit-Reset", "3"}}}, false, []time.Duration{0}, ""},
		{"200 x epoch", []reply{{200, []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", strconv.FormatInt(now.Unix()+8, 10)}}}, false,
			[]time.Duration{8 * time.Second}, "X-RateLimit-Remaining: 0"},
		{"200 structured", []reply{{200, []string{"RateLimit", `"q";r=0;t=2`}}}, false, []time.Duration{2 * time.Second}, "RateLimit: 0"},
		{"ignore server limits", []reply{{200, []string{"RateLimit-Remaining", "0", "RateLimit-Reset", "3"}}}, true, []time.Duration{0}, ""},
		{"ignore server limits keeps retry-after", []reply{{429, []string{"Retry-After", "5", "RateLimit-Remaining", "0", "RateLimit-Reset", "30"}}}, true,
			[]time.Duration{5 * time.Second}, "429 Retry-After: 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var i int
			var mu sync.Mutex
			srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				rp := tt.replies[i]
				i++
				mu.Unlock()
				for k := 0; k < len(rp.header); k += 2 {
					w.Header().Set(rp.header[k], rp.header[k+1])
				}
				w.WriteHeader(rp.code)
			}))
			p := &fakePauser{}
			e := newFetch(t, FetchOptions{Pauser: p, Clock: &setClock{t: now}, IgnoreServerLimits: tt.ignore})
			var last *Result
			for range tt.replies {
				last = fetchOne(t, e, srv.URL)
			}
			var want []pauseCall
			for _, d := range tt.wantPause {
				if d > 0 {
					want = append(want, pauseCall{now.Add(d), "server: " + tt.reason})
				}
			}
			got := p.list()
			if len(got) != len(want) || len(want) > 0 && (!got[len(got)-1].until.Equal(want[len(want)-1].until) || got[len(got)-1].reason != want[len(want)-1].reason) {
				t.Errorf("pauses = %v, want %v", got, want)
			}
			if len(want) > 0 && (!last.HTTP.PauseUntil.Equal(want[len(want)-1].until) || last.HTTP.PauseReason != tt.reason) {
				t.Errorf("HTTP pause = %v %q, want %v %q", last.HTTP.PauseUntil, last.HTTP.PauseReason, want[len(want)-1].until, tt.reason)
			}
		})
	}
}

// TestFetchBackoffDoubles: 429s without Retry-After share a backoff while
// it lasts, double it after, and a success resets it.
func TestFetchBackoffDoubles(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := &setClock{t: now}
	var code int
	var mu sync.Mutex
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(code)
	}))
	setCode := func(c int) { mu.Lock(); code = c; mu.Unlock() }
	p := &fakePauser{}
	e := newFetch(t, FetchOptions{Pauser: p, Clock: clock, Backoff: time.Second})
	step := func(at time.Duration, c int, wantUntil time.Duration) {
		t.Helper()
		clock.Set(now.Add(at))
		setCode(c)
		res := fetchOne(t, e, srv.URL)
		var got time.Duration
		if !res.HTTP.PauseUntil.IsZero() {
			got = res.HTTP.PauseUntil.Sub(now)
		}
		if got != wantUntil {
			t.Errorf("at %v, status %d: pause until +%v, want +%v", at, c, got, wantUntil)
		}
	}
	step(0, 429, 1*time.Second)                               // first: 1s
	step(500*time.Millisecond, 503, 1*time.Second)            // in flight during it: shared
	step(1*time.Second, 429, 3*time.Second)                   // after it: 2s more
	step(3*time.Second, 429, 7*time.Second)                   // 4s
	step(7*time.Second, 200, 0)                               // success resets
	step(8*time.Second, 429, 9*time.Second)                   // 1s again
	step(100*time.Second, 429, 100*time.Second+2*time.Second) // doubled, not reset by time alone
	for range 10 {
		clock.Set(clock.Now().Add(time.Hour))
		setCode(429)
		fetchOne(t, e, srv.URL)
	}
	last := p.list()[len(p.list())-1]
	if d := last.until.Sub(clock.Now()); d != MaxBackoff {
		t.Errorf("after many 429s: backoff %v, want the cap %v", d, MaxBackoff)
	}
}

// TestFetch429PausesAllAdmissions runs a pool on a real limiter against a
// strict server that refuses the first request with Retry-After: 1. No
// request may arrive during the pause, except those already on their way
// when the 429 came back; the refused item is retried after it.
func TestFetch429PausesAllAdmissions(t *testing.T) {
	ss, err := strictserver.New(strictserver.Options{RefuseFirst: 1, RetryAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var refusedAt time.Time
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		ss.ServeHTTP(sw, r)
		if sw.code == http.StatusTooManyRequests {
			mu.Lock()
			refusedAt = time.Now()
			mu.Unlock()
		}
	}))
	lim, err := throttle.New(nil, throttle.WithMaxInFlight(4))
	if err != nil {
		t.Fatal(err)
	}
	e := newFetch(t, FetchOptions{Pauser: lim})
	var okCount int
	p, _ := NewPool(Options{Jobs: 4, Limiter: lim, Executor: e, Retries: 2, OnEvent: func(ev Event) {
		if ev.Kind == JobDone && ev.Result.OK() {
			okCount++
		}
	}})
	items := make([]string, 12)
	for i := range items {
		items[i] = srv.URL + "/" + strconv.Itoa(i)
	}
	if err := p.Run(context.Background(), feed(items...)); err != nil {
		t.Fatal(err)
	}
	st := ss.Stats()
	if okCount != 12 || st.Refused != 1 || st.Accepted != 12 {
		t.Fatalf("ok %d, server accepted %d, refused %d; want 12, 12, 1", okCount, st.Accepted, st.Refused)
	}
	// Requests admitted before the pause was set may still arrive just
	// after the 429; give them 100ms. Nothing else until the second is up.
	const inFlightSlack = 100 * time.Millisecond
	var after int
	for _, a := range ss.Arrivals() {
		d := a.Sub(refusedAt)
		if d > inFlightSlack && d < time.Second {
			t.Errorf("arrival %v after the 429, during its Retry-After: 1", d)
		}
		if d >= time.Second {
			after++
		}
	}
	if after == 0 {
		t.Error("no arrival after the pause, want the retry and the rest")
	}
	if s := lim.Stats(); s.Pauses < 1 || !strings.Contains(s.PauseReason, "429 Retry-After: 1") {
		t.Errorf("limiter pauses %d, reason %q; want a 429 pause", s.Pauses, s.PauseReason)
	}
}

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// TestFetchHonoursRateLimitHeaders: pace has no rule of its own; the
// server's RateLimit headers alone keep it within 3/500ms.
func TestFetchHonoursRateLimitHeaders(t *testing.T) {
	for _, style := range []strictserver.HeaderStyle{strictserver.RateLimitHeaders, strictserver.XRateLimitHeaders} {
		ss, err := strictserver.New(strictserver.Options{
			Rules:   []throttle.Rule{{N: 3, Window: 500 * time.Millisecond}},
			Headers: style,
		})
		if err != nil {
			t.Fatal(err)
		}
		srv := serve(t, ss)
		lim, _ := throttle.New(nil, throttle.WithMaxInFlight(1))
		e := newFetch(t, FetchOptions{Pauser: lim})
		failed := 0
		p, _ := NewPool(Options{Jobs: 1, Limiter: lim, Executor: e, OnEvent: func(ev Event) {
			if ev.Kind == JobDone && !ev.Result.OK() {
				failed++
			}
		}})
		if err := p.Run(context.Background(), feed(nItemsURL(srv.URL, 5)...)); err != nil {
			t.Fatal(err)
		}
		if st := ss.Stats(); st.Refused != 0 || failed != 0 || lim.Stats().Pauses < 1 {
			t.Errorf("style %d: refused %d, failed %d, pauses %d; want 0, 0, at least 1", style, st.Refused, failed, lim.Stats().Pauses)
		}
	}
}

func nItemsURL(base string, n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = base + "/" + strconv.Itoa(i+1)
	}
	return s
}

// TestFetchKeepsRulesAgainstStrictServer is the accuracy scenario scaled
// down: 30 URLs under 5/250ms and 12/750ms, 4 in flight, with a margin
// for loopback jitter. The strict server must refuse nothing, and the run
// cannot beat the fastest legal schedule (1.75s).
func TestFetchKeepsRulesAgainstStrictServer(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 2s")
	}
	rules := []throttle.Rule{{N: 5, Window: 250 * time.Millisecond}, {N: 12, Window: 750 * time.Millisecond}}
	ss, err := strictserver.New(strictserver.Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, ss)
	const margin = 25 * time.Millisecond
	lim, _ := throttle.New(rules, throttle.WithMaxInFlight(4), throttle.WithMargin(margin))
	e := newFetch(t, FetchOptions{Pauser: lim})
	p, _ := NewPool(Options{Jobs: 4, Limiter: lim, Executor: e})
	if err := p.Run(context.Background(), feed(nItemsURL(srv.URL, 30)...)); err != nil {
		t.Fatal(err)
	}
	st := ss.Stats()
	if st.Refused != 0 || st.Accepted != 30 {
		t.Errorf("server accepted %d, refused %d; want 30, 0", st.Accepted, st.Refused)
	}
	for _, c := range throttle.Check(rules, ss.Arrivals()) {
		if c.Violations > 0 {
			t.Errorf("rule %v: %d violations on arrival", c.Rule, c.Violations)
		}
	}
	if ms := st.Makespan(); ms < 1750*time.Millisecond || ms > 1750*time.Millisecond+7*margin+time.Second {
		t.Errorf("makespan %v, want between 1.75s and about 1.75s + 7×margin", ms)
	}
}

// BenchmarkFetch measures the executor and the pool against a local
// server: 32 in flight, no rule. Compare with
// curl --parallel --parallel-max 32 (see scripts/bench.sh).
func BenchmarkFetch(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Path+"\n")
	}))
	defer srv.Close()
	e, err := NewFetchExecutor(FetchOptions{Client: NewHTTPClient(HTTPClientOptions{Conns: 32}), UserAgent: "pace/bench"})
	if err != nil {
		b.Fatal(err)
	}
	lim, _ := throttle.New(nil, throttle.WithMaxInFlight(32))
	p, _ := NewPool(Options{Jobs: 32, Limiter: lim, Executor: e, OnEvent: func(ev Event) {
		if ev.Kind == JobDone {
			ev.Result.Stdout.WriteTo(io.Discard)
		}
	}})
	items := make(chan Item, 64)
	go func() {
		for i := range b.N {
			items <- Item{Text: srv.URL + "/" + strconv.Itoa(i)}
		}
		close(items)
	}()
	b.ReportAllocs()
	b.ResetTimer()
	if err := p.Run(context.Background(), items); err != nil {
		b.Fatal(err)
	}
}
