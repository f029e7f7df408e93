package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pace-cli/pace/internal/redact"
	"github.com/pace-cli/pace/internal/strictserver"
	"github.com/pace-cli/pace/internal/tcptest"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// Tests that talk to an httptest.Server use real time and check
// invariants with generous bounds; the server-signal tests in
// signals_test.go answer in process and run in synctest bubbles.

func newFetch(t testing.TB, opts Options) *Executor {
	t.Helper()
	if opts.Client == nil {
		opts.Client = NewClient(ClientOptions{Conns: 4})
	}
	e, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

// fetchOne prepares and executes one job for item.
func fetchOne(t *testing.T, e *Executor, item string) *runner.Result {
	t.Helper()
	return fetchSeq(t, context.Background(), e, item, 1)
}

// fetchSeq prepares and executes job seq for item; the result is closed
// when the test ends.
func fetchSeq(t *testing.T, ctx context.Context, e *Executor, item string, seq int64) *runner.Result {
	t.Helper()
	job := runner.Job{Seq: seq, Item: item, Attempt: 1, Slot: 1}
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
	method, uri, host, body string
	header                  http.Header
}

// holds returns the first of secrets that the request shows anywhere: in
// its URI, a header value or its body; "" if none.
func (s seen) holds(secrets ...string) string {
	all := []string{s.uri, s.body}
	for _, vs := range s.header {
		all = append(all, vs...)
	}
	for _, secret := range secrets {
		for _, v := range all {
			if strings.Contains(v, secret) {
				return secret
			}
		}
	}
	return ""
}

// reqRecorder is a handler that records requests and answers with reply,
// by default 200 and "body of PATH\n".
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

// last returns the last request seen, failing the test if none came.
func (rec *reqRecorder) last(t *testing.T) seen {
	t.Helper()
	all := rec.all()
	if len(all) == 0 {
		t.Fatal("the server saw no request, want one")
	}
	return all[len(all)-1]
}

func serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// closedPort returns the address of a local port that nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func feed(items ...string) chan runner.Item {
	ch := make(chan runner.Item, len(items))
	for _, s := range items {
		ch <- runner.Item{Text: s}
	}
	close(ch)
	return ch
}

func nItemsURL(base string, n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = base + "/" + strconv.Itoa(i+1)
	}
	return s
}

// runPool runs a pool with opts over items and returns the final results
// (without their output) in the order they came.
func runPool(t *testing.T, opts runner.Options, items ...string) []runner.Result {
	t.Helper()
	var mu sync.Mutex
	var done []runner.Result
	onEvent := opts.OnEvent
	opts.OnEvent = func(ev runner.Event) {
		if onEvent != nil {
			onEvent(ev)
		}
		if ev.Kind == runner.JobDone {
			r := *ev.Result
			r.Stdout, r.Stderr = nil, nil
			mu.Lock()
			done = append(done, r)
			mu.Unlock()
		}
	}
	p, err := runner.NewPool(opts)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	if err := p.Run(context.Background(), feed(items...)); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	return done
}

func TestFetchGetsBodyAndSetsArgv(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	e := newFetch(t, Options{UserAgent: "pace/test"})
	job := runner.Job{Seq: 7, Item: srv.URL + "/a/b?x=1", Attempt: 1, Slot: 1}
	if err := e.Prepare(&job); err != nil {
		t.Fatal(err)
	}
	if want := []string{"GET", srv.URL + "/a/b?x=1"}; !slices.Equal(job.Argv, want) {
		t.Errorf("Argv = %q, want %q", job.Argv, want)
	}
	res := e.Execute(context.Background(), &job)
	defer res.Close()
	if !res.OK() || res.ExitCode != 0 {
		t.Fatalf("Execute: %s, want success", res.Status())
	}
	if got := string(res.Stdout.Bytes()); got != "body of /a/b\n" {
		t.Errorf("Stdout = %q, want %q", got, "body of /a/b\n")
	}
	h := res.HTTP
	if h.Method != "GET" || h.URL != srv.URL+"/a/b?x=1" || h.StatusCode != 200 || h.Status != "200 OK" ||
		h.Proto != "HTTP/1.1" || h.Bytes != 13 || h.File != "" || h.Conn != "" || !h.PauseUntil.IsZero() {
		t.Errorf("HTTP = %+v, want GET of the URL, 200 OK over HTTP/1.1, 13 bytes, nothing else", *h)
	}
	if ua := rec.last(t).header.Get("User-Agent"); ua != "pace/test" {
		t.Errorf("User-Agent = %q, want pace/test", ua)
	}
}

// TestFetchSent: Sent is when the request left, between the call and its
// return; zero when nothing was sent.
func TestFetchSent(t *testing.T) {
	srv := serve(t, &reqRecorder{})
	e := newFetch(t, Options{})
	before := time.Now()
	res := fetchOne(t, e, srv.URL+"/x")
	after := time.Now()
	if !res.OK() || res.Sent.IsZero() || res.Sent.Before(before) || res.Sent.After(after) {
		t.Errorf("Execute: %s, Sent %v; want ok, sent between %v and %v", res.Status(), res.Sent, before, after)
	}
	// The answer came after the request left, on the connection opened
	// for it; the next goes on the same one, kept alive.
	if res.Answered.Before(res.Sent) || res.Answered.After(after) || !res.NewConn || !res.Local {
		t.Errorf("Execute: Answered %v (Sent %v), NewConn %v, Local %v; want answered after it was sent, on a new connection to this machine",
			res.Answered, res.Sent, res.NewConn, res.Local)
	}
	if res = fetchOne(t, e, srv.URL+"/y"); res.Answered.IsZero() || res.NewConn {
		t.Errorf("the second fetch: Answered %v, NewConn %v; want answered, on the kept connection", res.Answered, res.NewConn)
	}
	res = fetchOne(t, e, "http://"+closedPort(t)+"/x")
	if res.OK() || !res.Sent.IsZero() || !res.Answered.IsZero() {
		t.Errorf("connection refused: %s, Sent %v, Answered %v; want a failure, both zero", res.Status(), res.Sent, res.Answered)
	}
}

// A job the pool prepared and admitted is built once and not admitted
// again (a limiter of one call an hour would hold it); its Sent is when
// its first request left, before the redirect's request arrived.
func TestFetchSentAdmitted(t *testing.T) {
	var second atomic.Int64 // when the redirect's target was asked for, Unix ns
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/from" {
			http.Redirect(w, r, "/to", http.StatusFound)
			return
		}
		second.Store(time.Now().UnixNano())
		io.WriteString(w, "ok")
	}))
	// Room for the request and its redirect, which is a call of its own.
	lim, err := throttle.New(throttle.Options{Rules: []throttle.Rule{{N: 2, Window: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	e := newFetch(t, Options{Backend: lim})
	job := runner.Job{Seq: 1, Item: srv.URL + "/from", Attempt: 1}
	if err := e.Prepare(&job); err != nil {
		t.Fatal(err)
	}
	if job.Prepared == nil {
		t.Fatal("Prepare kept nothing for Execute")
	}
	before := time.Now()
	if job.Admission, err = lim.Admit(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	defer job.Admission.Release()
	res := e.Execute(context.Background(), &job)
	defer res.Close()
	if !res.OK() || string(res.Stdout.Bytes()) != "ok" {
		t.Fatalf("Execute: %s, want the redirect followed, under the pool's admission", res.Status())
	}
	if res.Sent.Before(before) || res.Sent.UnixNano() > second.Load() {
		t.Errorf("Sent %v; want after %v, before the second request arrived (%v)", res.Sent, before, time.Unix(0, second.Load()))
	}
	if res.Job.Prepared != nil {
		t.Error("Result.Job.Prepared kept the request")
	}
	if got := lim.Stats().Admitted; got != 2 {
		t.Errorf("admitted %d calls; want 2, the request and its redirect", got)
	}
}

func TestFetchTemplateHeadersAndData(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	e := newFetch(t, Options{
		URL:       srv.URL + "/items/{}?n={#}",
		Headers:   []string{"X-Item: id-{}", "X-Slot:{%}", "Accept: application/json", "Accept: text/plain", "Host: api.example.test", "User-Agent: mine/1"},
		Data:      `{"id":"{}"}`,
		HasData:   true,
		UserAgent: "pace/test",
	})
	res := fetchSeq(t, context.Background(), e, "42", 3)
	if !res.OK() {
		t.Fatalf("Execute: %s", res.Status())
	}
	got := rec.last(t)
	want := seen{method: "POST", uri: "/items/42?n=3", host: "api.example.test", body: `{"id":"42"}`}
	if got.method != want.method || got.uri != want.uri || got.host != want.host || got.body != want.body {
		t.Errorf("request = %s %s host %s body %q, want %s %s host %s body %q",
			got.method, got.uri, got.host, got.body, want.method, want.uri, want.host, want.body)
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

func TestFetchColumns(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	e := newFetch(t, Options{URL: srv.URL + "/{1}/{2}"})
	job := runner.Job{Seq: 1, Item: "users 7", Cols: []string{"users", "7"}, Attempt: 1, Slot: 1}
	if err := e.Prepare(&job); err != nil {
		t.Fatal(err)
	}
	res := e.Execute(context.Background(), &job)
	defer res.Close()
	if got := rec.last(t).uri; !res.OK() || got != "/users/7" {
		t.Errorf("Execute: %s, fetched %q; want ok, /users/7", res.Status(), got)
	}
}

func TestFetchRejectsLineBreaksInHeaders(t *testing.T) {
	e := newFetch(t, Options{URL: "http://h/x", Headers: []string{"X-Item: {}"}})
	job := runner.Job{Seq: 4, Item: "a\r\nX-Injected: 1", Attempt: 1, Slot: 1}
	if err := e.Prepare(&job); !errors.Is(err, runner.ErrPermanent) || !strings.Contains(err.Error(), "header X-Item") {
		t.Errorf("Prepare(item with CRLF) = %v, want a permanent header error", err)
	}
}

func TestFetchShowItem(t *testing.T) {
	plain := newFetch(t, Options{URL: "http://h/{}", Headers: []string{"Authorization: Bearer fixed-{#}"}})
	tests := []struct{ item, want string }{
		{"https://u:p@h/x", "https://u:REDACTED@h/x"},
		{"https://tok@h/x", "https://REDACTED@h/x"},
		{"42", "42"},
		{"http://h/x?api_key=k123&page=2", "http://h/x?api_key=REDACTED&page=2"},
	}
	for _, tt := range tests {
		if got := plain.ShowItem(&runner.Job{Item: tt.item}); got != tt.want {
			t.Errorf("ShowItem(%q) = %q, want %q", tt.item, got, tt.want)
		}
	}
	secret := newFetch(t, Options{URL: "http://h/x", Headers: []string{"Authorization: Bearer {}"}})
	if got := secret.ShowItem(&runner.Job{Item: "tok-123"}); got != redact.Placeholder {
		t.Errorf("ShowItem(item used as a token) = %q, want %q", got, redact.Placeholder)
	}
	// The template puts the item, or its columns, where a credential goes.
	for _, tt := range []struct {
		url  string
		job  runner.Job
		want string
	}{
		{"http://h/x?api_key={}", runner.Job{Item: "k3y-item"}, redact.Placeholder},
		{"http://{}@h/x", runner.Job{Item: "tok-item"}, redact.Placeholder},
		{"http://{}@h/x", runner.Job{Item: "alice:pw-item"}, "alice:REDACTED"},
		{"http://{1}:{2}@h/x", runner.Job{Item: "alice,pw-col", Cols: []string{"alice", "pw-col"}}, "alice,REDACTED"},
		{"http://h/x/{}?page=2", runner.Job{Item: "42"}, "42"},
	} {
		e := newFetch(t, Options{URL: tt.url})
		if got := e.ShowItem(&tt.job); got != tt.want {
			t.Errorf("with %s, ShowItem(%q) = %q, want %q", tt.url, tt.job.Item, got, tt.want)
		}
	}
}

func TestFetchEmptyUserAgentSendsNone(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	e := newFetch(t, Options{Headers: []string{"User-Agent:"}, UserAgent: "pace/test"})
	fetchOne(t, e, srv.URL)
	if ua, ok := rec.last(t).header["User-Agent"]; ok {
		t.Errorf("User-Agent = %q, want none", ua)
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
	e := newFetch(t, Options{
		URL: srv.URL + "/upload/{/.}", Method: "PUT", Data: "@{}", HasData: true,
		Headers: []string{"Content-Type: application/json"},
	})
	res := fetchOne(t, e, file)
	if !res.OK() {
		t.Fatalf("Execute: %s", res.Status())
	}
	got := rec.last(t)
	if got.method != "PUT" || got.body != content || got.header.Get("Content-Type") != "application/json" {
		t.Errorf("request = %s, %d bytes, %s; want PUT, %d bytes, application/json",
			got.method, len(got.body), got.header.Get("Content-Type"), len(content))
	}

	job := runner.Job{Seq: 2, Item: filepath.Join(dir, "missing"), Attempt: 1, Slot: 1}
	err := e.Prepare(&job)
	if !errors.Is(err, runner.ErrPermanent) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Prepare(missing data file) = %v, want a permanent not-exist error", err)
	}

	// A directory fails before admission: each attempt used to send the
	// headers, fail reading it as a network error does, and be retried.
	job = runner.Job{Seq: 3, Item: dir, Attempt: 1, Slot: 1}
	if err := e.Prepare(&job); !errors.Is(err, runner.ErrPermanent) || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("Prepare(data file that is a directory) = %v, want a permanent error saying so", err)
	}
}

// A regular data file that changes size while it is sent (here, between
// the request and the redirect that sends it again) fails the attempt
// saying so, where net/http says only that the lengths differ.
func TestFetchDataFileChangedWhileSent(t *testing.T) {
	file := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(file, []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/first" {
			if err := os.WriteFile(file, []byte(`{"a":1,"b":2}`), 0o644); err != nil {
				t.Error(err)
			}
			http.Redirect(w, r, "/second", http.StatusTemporaryRedirect)
		}
	}))
	t.Cleanup(srv.Close)
	e := newFetch(t, Options{URL: srv.URL + "/{}", Method: "POST", Data: "@" + file, HasData: true})
	res := fetchOne(t, e, "first")
	want := "data file " + file + " changed while it was sent (7 bytes when the request began, 13 now)"
	if res.OK() || res.Err == nil || !strings.Contains(res.Err.Error(), want) {
		t.Errorf("Execute = %s, %v; want a failure saying %q", res.Status(), res.Err, want)
	}
	if errors.Is(res.Err, runner.ErrPermanent) {
		t.Errorf("Execute = %v: permanent, want a failure a retry may cure", res.Err)
	}
}

func TestNewRejects(t *testing.T) {
	client := NewClient(ClientOptions{})
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no client", Options{}, "no HTTP client"},
		{"header without colon", Options{Client: client, Headers: []string{"X-Foo"}}, `bad header`},
		{"header name with space", Options{Client: client, Headers: []string{"X Foo: 1"}}, `bad header`},
		{"header name placeholder", Options{Client: client, Headers: []string{"X-{}: 1"}}, `bad header`},
		{"method", Options{Client: client, Method: "GE T"}, `bad method "GE T"`},
		{"fixed template", Options{Client: client, URL: "https://u:pw123@api.example/x"}, "no placeholder"},
		{"data from stdin", Options{Client: client, Data: "@-", HasData: true}, "stdin"},
		// A line break in a header the same for every job is refused
		// before anything runs, not job after job (pw123 never shown).
		{"header line break", Options{Client: client, Headers: []string{"Authorization: pw123\r\nX-Evil: 1"}}, "header Authorization: value holds a line break or NUL"},
	}
	for _, tt := range tests {
		_, err := New(tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want an error containing %q", tt.name, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw123") {
			t.Errorf("%s: error %q shows the password", tt.name, err)
		}
	}
	// A placeholder in a header or the data is enough to vary a template,
	// and one output file needs none.
	for _, opts := range []Options{
		{Client: client, URL: "https://h/x", Headers: []string{"X-Seq: {#}"}},
		{Client: client, URL: "https://h/x", Data: "n={#}", HasData: true},
		{Client: client, URL: "https://h/x", OutputFile: "out"},
	} {
		if _, err := New(opts); err != nil {
			t.Errorf("New(%+v) = %v, want nil", opts, err)
		}
	}
	// A bad header's value, which may be a credential, is not shown.
	_, err := New(Options{Client: client, Headers: []string{"Bad Name: topsecret"}})
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("New(bad header) = %v, want an error without the value", err)
	}
}

// TestNewChecksURLTemplate: a template whose literal start cannot make a
// URL is refused before anything runs, quoting the template redacted.
func TestNewChecksURLTemplate(t *testing.T) {
	client := NewClient(ClientOptions{})
	tests := []struct {
		tmpl string
		want string // "" for accepted
	}{
		{"{}", ""},
		{"{1}", ""},
		{"{1}://{2}/x", ""},
		{"http://{}/x", ""},
		{"https://host/{}", ""},
		{"HTTPS://host:8443/a?q={}", ""},
		{"127.0.0.1:8765/x{}", `URL template "127.0.0.1:8765/x{}": no scheme: want it to start with http:// or https://, such as http://127.0.0.1:8765/x{}`},
		{"example.com/{}", `URL template "example.com/{}": no scheme`},
		{"ftp://h/{}", `URL template "ftp://h/{}": scheme "ftp": want http or https`},
		{"http:///{}", `URL template "http:///{}": no host after the scheme`},
		{"https://?q={}", `URL template "https://?q={}": no host after the scheme`},
		{"ftp://alice:hunter22@h/{}", `URL template "ftp://alice:REDACTED@h/{}": scheme "ftp"`},
		{"localhost:8765/{}?api_key=hunter22", `URL template "localhost:8765/{}?api_key=REDACTED": no scheme`},
	}
	for _, tt := range tests {
		_, err := New(Options{Client: client, URL: tt.tmpl})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("New(URL %q) = %v, want nil", tt.tmpl, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("New(URL %q) = %v, want an error starting %q", tt.tmpl, err, tt.want)
		case err != nil && strings.Contains(err.Error(), "hunter22"):
			t.Errorf("New(URL %q) = %v, shows the credential", tt.tmpl, err)
		}
	}
}

func TestFetchBadURLs(t *testing.T) {
	e := newFetch(t, Options{})
	tests := []struct{ item, want string }{
		{"example.com/x", "no scheme"},
		{"ftp://alice:hunter22@example.com/x", `unsupported scheme "ftp"`},
		{"localhost:8080/x", `unsupported scheme "localhost"`},
		{"http://[::1/x", "missing ']'"},
		{"http://bob:hunter22@host:port/x", "invalid port"},
		{"http:///path", "no host"},
		{"http://bob:hunter22@127.0.0.1:99999/x", "port 99999 is not a port (want 1 to 65535)"},
		{"http://127.0.0.1:0/x", "port 0 is not a port"},
		{"http:opaque", "want scheme://host"},
		{"http://h/%zz", "invalid URL escape"},
		{"alice:hunter22@example.com/x", "no scheme"},
		{"", "empty"},
	}
	for i, tt := range tests {
		job := runner.Job{Seq: int64(i + 1), Item: tt.item, Attempt: 1, Slot: 1}
		err := e.Prepare(&job)
		if !errors.Is(err, errBadURL) || !errors.Is(err, runner.ErrPermanent) {
			t.Errorf("Prepare(%q) = %v, want ErrBadURL, permanent", tt.item, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.want) || !strings.HasPrefix(msg, fmt.Sprintf("job %d: bad URL", i+1)) {
			t.Errorf("Prepare(%q) = %q, want \"job %d: bad URL ...%s...\"", tt.item, msg, i+1, tt.want)
		}
		if strings.Contains(msg, "hunter22") {
			t.Errorf("Prepare(%q) = %q, shows the password", tt.item, msg)
		}
	}
}

func TestFetchBadURLInPoolFailsOnlyThatItem(t *testing.T) {
	rec := &reqRecorder{}
	srv := serve(t, rec)
	e := newFetch(t, Options{})
	done := runPool(t, runner.Options{Jobs: 2, Executor: e, Retries: 2}, srv.URL+"/1", "nope", srv.URL+"/3")
	var ok, bad int
	for _, r := range done {
		switch {
		case r.OK():
			ok++
		case errors.Is(r.Err, errBadURL) && r.Start.IsZero():
			bad++
		}
	}
	if ok != 2 || bad != 1 || len(rec.all()) != 2 {
		t.Errorf("got %d ok and %d bad URLs (never admitted), %d requests; want 2, 1, 2", ok, bad, len(rec.all()))
	}
}

func TestFetchStatusFailsItem(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/"))
		w.WriteHeader(code)
		io.WriteString(w, "error page\n")
	}))
	e := newFetch(t, Options{})
	tests := []struct {
		code      int
		permanent bool
	}{
		{404, true}, {400, true}, {410, true}, {304, true}, {501, true}, {505, true},
		{408, false}, {425, false}, {429, false}, {500, false}, {502, false}, {503, false}, {504, false},
	}
	for _, tt := range tests {
		res := fetchOne(t, e, srv.URL+"/"+strconv.Itoa(tt.code))
		var se *statusError
		if res.OK() || !errors.As(res.Err, &se) || se.Code != tt.code || res.ExitCode != 1 || res.HTTP.StatusCode != tt.code {
			t.Errorf("status %d: OK = %v, Err = %v, ExitCode = %d; want a StatusError, exit code 1", tt.code, res.OK(), res.Err, res.ExitCode)
			continue
		}
		if got := errors.Is(res.Err, runner.ErrPermanent); got != tt.permanent {
			t.Errorf("status %d: permanent = %v, want %v", tt.code, got, tt.permanent)
		}
		if res.Stdout.Len() != 0 || res.HTTP.Bytes != 0 {
			t.Errorf("status %d: %d bytes on stdout, HTTP.Bytes %d; want none", tt.code, res.Stdout.Len(), res.HTTP.Bytes)
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
	e := newFetch(t, Options{Headers: []string{"Authorization: Bearer tok-{}-xyz", "X-Api-Key: k3y-{#}"}})
	res := fetchOne(t, e, srv.URL+"/secret")
	stderr := string(res.Stderr.Bytes())
	if strings.Contains(stderr, "tok-") || strings.Contains(stderr, "k3y-1") || !strings.Contains(stderr, redact.Placeholder) {
		t.Errorf("Stderr = %q, want the echoed credentials redacted", stderr)
	}
}

// Headers without placeholders are expanded once for every job: a
// redirect to another origin that drops the secret one does not drop it
// from the next job, and its echoed value is redacted from each error.
// A literal value with a line break fails every job alike.
func TestFetchFixedHeaders(t *testing.T) {
	var got []string
	var mu sync.Mutex
	other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, "other:"+r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path+":"+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/away" {
			http.Redirect(w, r, other.URL+"/", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "bad credentials: %s\n", r.Header.Get("Authorization"))
	}))
	e := newFetch(t, Options{Headers: []string{"Authorization: Bearer s3cr3t-fixed"}})
	if res := fetchSeq(t, context.Background(), e, srv.URL+"/away", 1); !res.OK() {
		t.Fatalf("job 1: %s", res.Status())
	}
	for seq := int64(2); seq <= 3; seq++ {
		res := fetchSeq(t, context.Background(), e, srv.URL+"/denied", seq)
		if stderr := string(res.Stderr.Bytes()); strings.Contains(stderr, "s3cr3t") || !strings.Contains(stderr, redact.Placeholder) {
			t.Errorf("job %d: Stderr = %q, want the echoed credential redacted", seq, stderr)
		}
	}
	want := []string{"/away:Bearer s3cr3t-fixed", "other:", "/denied:Bearer s3cr3t-fixed", "/denied:Bearer s3cr3t-fixed"}
	if !slices.Equal(got, want) {
		t.Errorf("the server saw %q, want %q", got, want)
	}

	// A fixed header holding a line break is refused before any job.
	if _, err := New(Options{Client: NewClient(ClientOptions{}), Headers: []string{"X-A: a\rb"}}); err == nil || !strings.Contains(err.Error(), "line break") {
		t.Errorf("New with a fixed header holding a line break = %v, want an error saying so", err)
	}
}

// TestFetchRedacts: values of a parameter named by Options.SecretParams, and
// the signature and credential of a pre-signed S3 URL, appear nowhere:
// not in Argv, ShowItem, HTTPInfo.URL, errors or the error body.
func TestFetchRedacts(t *testing.T) {
	refused := closedPort(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "no such thing: %s\n", r.URL.RequestURI()) // echoes the secrets
	})
	mux.HandleFunc("/bounce", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+refused+"/gone?"+r.URL.RawQuery, http.StatusFound)
	})
	srv := serve(t, mux)
	e := newFetch(t, Options{SecretParams: []string{"myparam"}})
	const (
		mine       = "hunter2-mine"
		credential = "AKIDEXAMPLE"
		signature  = "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024"
	)
	s3 := "?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + credential + "%2F20250101%2Fus-east-1%2Fs3%2Faws4_request" +
		"&X-Amz-Date=20250101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature=" + signature
	items := []string{
		srv.URL + "/missing?myparam=" + mine + "&page=2",
		srv.URL + "/bounce?myparam=" + mine,
		"http://" + refused + "/x?myparam=" + mine,
		srv.URL + "/missing" + s3,
		srv.URL + "/bounce" + s3,
	}
	for i, item := range items {
		job := runner.Job{Seq: int64(i + 1), Item: item, Attempt: 1, Slot: 1}
		if err := e.Prepare(&job); err != nil {
			t.Fatalf("Prepare(%q): %v", item, err)
		}
		res := e.Execute(context.Background(), &job)
		if res.Err == nil {
			t.Errorf("item %d: %s, want a failure", i+1, res.Status())
			res.Close()
			continue
		}
		shown := map[string]string{
			"Argv":       strings.Join(job.Argv, " "),
			"ShowItem":   e.ShowItem(&runner.Job{Item: item}),
			"HTTP.URL":   res.HTTP.URL,
			"error":      res.Err.Error(),
			"error body": string(res.Stderr.Bytes()),
		}
		res.Close()
		for what, s := range shown {
			for _, secret := range []string{mine, credential, signature} {
				if strings.Contains(s, secret) {
					t.Errorf("item %d: %s %q shows %q", i+1, what, s, secret)
				}
			}
		}
		if !strings.Contains(shown["Argv"], redact.Placeholder) || !strings.Contains(shown["error"], redact.Placeholder) {
			t.Errorf("item %d: Argv %q, error %q; want the secrets replaced by %s", i+1, shown["Argv"], shown["error"], redact.Placeholder)
		}
	}
}

// TestFetchHidesHeaderSecretsInURL: an item that goes into a secret
// header and into the URL too is hidden wherever the URL is shown (Argv,
// hence the job log and -v; HTTPInfo.URL; errors, for a status, a
// refused connection and a URL that does not parse), as ShowItem hides it.
func TestFetchHidesHeaderSecretsInURL(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "no key %s\n", r.URL.Query().Get("id")) // echoes it
	}))
	refused := closedPort(t)
	tests := []struct{ template, item string }{
		{srv.URL + "/s?id={}", "TOKAAA111"},
		{srv.URL + "/keys/{}/introspect", "TOKBBB222"},
		{"http://" + refused + "/s?id={}", "TOKCCC333"},
		{srv.URL + "/keys/{}", "TOK%zzDDD444"}, // does not parse
	}
	for _, tt := range tests {
		for _, header := range []string{"X-Api-Key: {}", "Authorization: Bearer {}"} {
			e := newFetch(t, Options{URL: tt.template, Headers: []string{header}, Timeout: 5 * time.Second})
			job := runner.Job{Seq: 1, Item: tt.item, Attempt: 1, Slot: 1}
			shown := map[string]string{"ShowItem": e.ShowItem(&runner.Job{Item: tt.item})}
			if err := e.Prepare(&job); err != nil {
				shown["Prepare error"] = err.Error()
			} else {
				res := e.Execute(context.Background(), &job)
				if res.OK() {
					t.Errorf("%s with %q: %s, want a failure", tt.template, header, res.Status())
				}
				shown["Argv"] = strings.Join(job.Argv, " ")
				shown["HTTP.URL"] = res.HTTP.URL
				shown["HTTP.Status"] = res.HTTP.Status
				shown["status"] = res.Status()
				shown["error body"] = string(res.Stderr.Bytes())
				res.Close()
			}
			tail := tt.item[len(tt.item)-6:] // "AAA111"
			for what, s := range shown {
				if strings.Contains(s, tail) {
					t.Errorf("%s with %q, item %q: %s %q shows the item", tt.template, header, tt.item, what, s)
				}
			}
			if !strings.Contains(shown["Argv"]+shown["Prepare error"], redact.Placeholder) {
				t.Errorf("%s with %q: Argv %q, Prepare error %q; want the item as %s",
					tt.template, header, shown["Argv"], shown["Prepare error"], redact.Placeholder)
			}
		}
	}
}

// TestFetchEscapesServerText: a hostile server's reason phrase and error
// body reach pace's lines (the job's error, -v's body) with their control
// characters escaped, so that they cannot drive the terminal.
func TestFetchEscapesServerText(t *testing.T) {
	const body = "denied\r\n\x1b[2Jcleared\x9b\u009b\xff\n"
	addr := tcptest.Serve(t, func(c net.Conn) {
		buf := make([]byte, 4096)
		c.Read(buf) // the request, whole in one read on loopback
		fmt.Fprintf(c, "HTTP/1.1 403 \x1b]0;pwned\x07\x1b[2J Gone\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	})
	e := newFetch(t, Options{})
	res := fetchOne(t, e, "http://"+addr+"/x")
	if res.HTTP.StatusCode != http.StatusForbidden {
		t.Fatalf("status %d (%s), want 403", res.HTTP.StatusCode, res.Status())
	}
	for what, got := range map[string]string{"HTTP.Status": res.HTTP.Status, "error": res.Status(), "error body": string(res.Stderr.Bytes())} {
		if strings.ContainsFunc(got, func(r rune) bool { return r != '\n' && (r < ' ' || r == 0x7f || r >= 0x80 && r < 0xa0) }) || !utf8.ValidString(got) {
			t.Errorf("%s = %q, holds control characters or invalid UTF-8", what, got)
		}
	}
	if want := `403 \x1b]0;pwned\a\x1b[2J Gone`; res.HTTP.Status != want {
		t.Errorf("HTTP.Status = %q, want %q", res.HTTP.Status, want)
	}
	if got, want := string(res.Stderr.Bytes()), "denied\n\\x1b[2Jcleared\\x9b\\u009b\\xff\n"; got != want {
		t.Errorf("error body = %q, want %q", got, want)
	}
}

func TestFetchLargeBodySpills(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 16<<10) // 256 KiB
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	e := newFetch(t, Options{SpillLimit: 4 << 10, TempDir: t.TempDir()})
	res := fetchOne(t, e, srv.URL)
	if !res.OK() || !res.Stdout.Spilled() || !bytes.Equal(res.Stdout.Bytes(), body) || res.HTTP.Bytes != int64(len(body)) {
		t.Errorf("OK %v, spilled %v, %d bytes (HTTP.Bytes %d); want the whole %d-byte body, spilled",
			res.OK(), res.Stdout.Spilled(), res.Stdout.Len(), res.HTTP.Bytes, len(body))
	}
}

// TestFetchMaxBody: a body past MaxBody fails the item for good and
// nothing of it is kept; a body of exactly MaxBody is fine.
func TestFetchMaxBody(t *testing.T) {
	body := strings.Repeat("x", 100)
	rec := &reqRecorder{reply: func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("chunked") {
			w.(http.Flusher).Flush() // no Content-Length
		}
		io.WriteString(w, body)
	}}
	srv := serve(t, rec)
	for _, query := range []string{"", "?chunked"} {
		for _, out := range []string{"stdout", "dir"} {
			name := out + query
			tmp := t.TempDir()
			opts := Options{MaxBody: 99, TempDir: tmp, SpillLimit: 10}
			if out == "dir" {
				opts.OutputDir = filepath.Join(tmp, "out")
			}
			e := newFetch(t, opts)
			done := runPool(t, runner.Options{Jobs: 1, Executor: e, Retries: 2}, srv.URL+"/big"+query)
			r := done[0]
			if r.OK() || !errors.Is(r.Err, runner.ErrPermanent) || !strings.Contains(r.Err.Error(), "body larger than 99 bytes") {
				t.Errorf("%s: MaxBody 99, 100-byte body: %s, want a permanent failure, body larger than 99 bytes", name, r.Status())
			}
			if r.HTTP.Bytes != 0 || r.HTTP.File != "" {
				t.Errorf("%s: HTTP.Bytes %d, File %q; want nothing kept", name, r.HTTP.Bytes, r.HTTP.File)
			}
			res := fetchOne(t, e, srv.URL+"/big"+query)
			if res.OK() || res.Stdout != nil || res.HTTP.Bytes != 0 {
				t.Errorf("%s: MaxBody 99, 100-byte body: %s, stdout %v, %d bytes; want a failure, nothing kept", name, res.Status(), res.Stdout, res.HTTP.Bytes)
			}
			if left := listTree(t, tmp); len(left) != 0 {
				t.Errorf("%s: left %q, want nothing", name, left)
			}

			opts.MaxBody = 100
			e = newFetch(t, opts)
			res = fetchOne(t, e, srv.URL+"/fits"+query)
			if !res.OK() || res.HTTP.Bytes != 100 {
				t.Errorf("%s: MaxBody 100, 100-byte body: %s, %d bytes; want ok, 100", name, res.Status(), res.HTTP.Bytes)
			}
		}
	}
	if n := len(rec.all()); n != 12 {
		t.Errorf("server saw %d requests, want 12 (a body too large is not fetched again)", n)
	}
}

// listTree returns every file under dir (directories aside), relative to
// it.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFetchTimeout(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	e := newFetch(t, Options{Timeout: 50 * time.Millisecond})
	start := time.Now()
	res := fetchOne(t, e, srv.URL)
	if !res.TimedOut || res.OK() || res.Timeout != 50*time.Millisecond || res.HTTP.Conn != "timeout" {
		t.Errorf("TimedOut = %v, Status %q, Conn %q; want a timeout after 50ms", res.TimedOut, res.Status(), res.HTTP.Conn)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Execute took %v, want about the timeout", d)
	}
	if errors.Is(res.Err, runner.ErrPermanent) {
		t.Errorf("timeout is permanent, want it retried")
	}
}

// A job killed (a second Ctrl-C, --halt now, stdout closed) while it
// waits for the answer or reads the body says so: "killed", not the
// runner's "kill now" it used to show.
func TestFetchKilledSaysKilled(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/body" {
			w.Write([]byte("part"))
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	}))
	e := newFetch(t, Options{})
	for _, path := range []string{"/head", "/body"} {
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(50*time.Millisecond, func() { cancel(runner.ErrKillNow) })
		res := fetchSeq(t, ctx, e, srv.URL+path, 1)
		if res.OK() || res.Err == nil || !strings.HasSuffix(res.Err.Error(), ": killed") {
			t.Errorf("%s killed: %v, want an error ending in \": killed\"", path, res.Err)
		}
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
	e := newFetch(t, Options{Headers: []string{"X-Auth-Token: hdr-tok-77"}})
	var finished []runner.Result
	var mu sync.Mutex
	done := runPool(t, runner.Options{Jobs: 1, Executor: e, Retries: 1, OnEvent: func(ev runner.Event) {
		if ev.Kind == runner.JobFinished {
			mu.Lock()
			finished = append(finished, *ev.Result)
			mu.Unlock()
		}
	}}, u.String())
	if len(finished) != 2 || len(done) != 1 || !done[0].OK() {
		t.Fatalf("%d attempts, final %v; want a failure then a success", len(finished), done)
	}
	first := finished[0]
	if first.HTTP.Conn != "reset" || errors.Is(first.Err, runner.ErrPermanent) {
		t.Errorf("first attempt: %v, Conn %q; want a retryable reset", first.Err, first.HTTP.Conn)
	}
	for _, secret := range []string{"s3cr3t-pw", "tk-55555", "hdr-tok-77"} {
		if strings.Contains(first.Status(), secret) || strings.Contains(strings.Join(done[0].Job.Argv, " "), secret) {
			t.Errorf("error %q or argv %q shows %q", first.Status(), done[0].Job.Argv, secret)
		}
	}
}

// TestFetchKeepsRulesAgainstStrictServer is the accuracy scenario scaled
// down: 30 URLs under 5/250ms and 12/750ms, 4 in flight, with a margin
// for loopback jitter, against a strict server in this process. Every URL
// is sent once. The admissions keep every rule widened by the margin, and
// the run cannot beat the fastest legal schedule. The server refuses
// nothing that pace's decisions explain: a refusal is excused (and
// logged) only when the calls it counted were admitted the window plus
// the margin apart and their lags, arrival at the server less admission
// on the one clock they share, differ by more than the margin. Under -race
// on a loaded machine (load 12 on 2 cores) the server's handlers run tens
// of milliseconds late, which no fixed margin covers.
func TestFetchKeepsRulesAgainstStrictServer(t *testing.T) {
	t.Parallel() // real time, mostly waiting
	if testing.Short() {
		t.Skip("takes 2s")
	}
	rules := []throttle.Rule{{N: 5, Window: 250 * time.Millisecond}, {N: 12, Window: 750 * time.Millisecond}}
	ss, err := strictserver.New(strictserver.Options{Rules: rules, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, ss)
	const margin = 80 * time.Millisecond
	lim, err := throttle.New(throttle.Options{Rules: rules, MaxInFlight: 4, Margin: margin})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	admitted := map[string]time.Time{} // by path
	e := newFetch(t, Options{Backend: lim})
	done := runPool(t, runner.Options{Jobs: 4, Limiter: lim, Executor: e, OnEvent: func(ev runner.Event) {
		if ev.Kind == runner.JobStarted {
			mu.Lock()
			admitted["/"+strconv.FormatInt(ev.Job.Seq, 10)] = ev.Admission.At
			mu.Unlock()
		}
	}}, nItemsURL(srv.URL, 30)...)

	st := ss.Stats()
	reqs := ss.Requests()
	if len(done) != 30 || len(reqs) != 30 || st.Accepted+st.Refused != 30 {
		t.Fatalf("%d items done, the server saw %d requests (%d accepted, %d refused); want 30 of each, every URL once", len(done), len(reqs), st.Accepted, st.Refused)
	}
	sent := make([]strictserver.Sent, len(reqs))
	for i, r := range reqs {
		at, ok := admitted[r.Path]
		if !ok {
			t.Fatalf("the server saw %s, which no job admitted", r.Path)
		}
		delete(admitted, r.Path) // each URL once
		sent[i] = strictserver.Sent{Name: r.Path, Admitted: at, Arrived: r.At, Cost: 1, Refused: r.Outcome == "refused"}
	}
	v := strictserver.Judge(rules, margin, sent)
	for _, f := range v.Faults {
		t.Error(f)
	}
	for _, x := range v.Excused {
		t.Logf("excused by the machine (%s): %s", loadAvg(), x)
	}
	for _, c := range throttle.Check(rules, calls1(ss.Arrivals()...)) {
		if c.Violations > 0 {
			t.Errorf("rule %v: %d violations on arrival", c.Rule, c.Violations)
		}
	}
	// Sanity bounds: no faster than the fastest legal schedule, not
	// grossly slower. A refusal pauses admissions (the backoff), which
	// the bound adds.
	fastest := fastest(rules, 30, 4, 0)
	slowest := fastest + 7*margin + time.Second + lim.Stats().PauseWaitTime
	if ms := st.Makespan(); st.Refused == 0 && ms < fastest || ms > slowest {
		t.Errorf("makespan %v, want between %v and about %v", ms, fastest, slowest)
	}
}

// BenchmarkFetch measures the executor and the pool against a local
// server: 32 in flight, no rule. Compare with
// curl --parallel --parallel-max 32 (see scripts/bench.sh).
func BenchmarkFetch(b *testing.B) {
	srv := serve(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Path+"\n")
	}))
	e := newFetch(b, Options{Client: NewClient(ClientOptions{Conns: 32}), UserAgent: "pace/bench"})
	lim, err := throttle.New(throttle.Options{MaxInFlight: 32})
	if err != nil {
		b.Fatal(err)
	}
	p, err := runner.NewPool(runner.Options{Jobs: 32, Limiter: lim, Executor: e, OnEvent: func(ev runner.Event) {
		if ev.Kind == runner.JobDone {
			if !ev.Result.OK() {
				b.Errorf("job %d: %s", ev.Job.Seq, ev.Result.Status())
			}
			ev.Result.Stdout.WriteTo(io.Discard)
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	items := make(chan runner.Item, 64)
	go func() {
		for i := range b.N {
			items <- runner.Item{Text: srv.URL + "/" + strconv.Itoa(i)}
		}
		close(items)
	}()
	b.ReportAllocs()
	b.ResetTimer()
	if err := p.Run(context.Background(), items); err != nil {
		b.Fatal(err)
	}
}

// calls1 returns one call of cost 1 per instant.
func calls1(times ...time.Time) []throttle.Call {
	cs := make([]throttle.Call, len(times))
	for i, t := range times {
		cs[i] = throttle.Call{At: t, Cost: 1}
	}
	return cs
}

// fastest is the makespan of the fastest legal schedule of n calls of
// cost 1 (throttle.Plan).
func fastest(rules []throttle.Rule, n, jobs int, runtime time.Duration) time.Duration {
	costs := make([]int, n)
	for i := range costs {
		costs[i] = 1
	}
	t0 := time.Unix(0, 0)
	at := throttle.Plan(rules, nil, costs, t0, jobs, runtime)
	return at[len(at)-1].Sub(t0)
}

// loadAvg returns the load averages, for a log line, or "load unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return "load " + strings.Join(f[:3], " ")
	}
	return "load unknown"
}
