package runner

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultMaxRedirects is how many redirects a fetch follows.
const DefaultMaxRedirects = 10

// DefaultBackoff is how long admissions pause after a 429 or 503 that
// says neither Retry-After nor when the quota resets. Each such answer in
// a row doubles it, up to MaxBackoff; a success resets it.
const DefaultBackoff = time.Second

// MaxBackoff caps the pause after repeated 429s or 503s without
// Retry-After.
const MaxBackoff = time.Minute

// errorBodyLimit is how much of a failed response's body Result.Stderr
// keeps; drainLimit is how much more is read so the connection can be
// reused.
const (
	errorBodyLimit = 4 << 10
	drainLimit     = 256 << 10
)

// ErrBadURL is wrapped by the error of a job whose URL cannot be fetched:
// it does not parse, has no scheme or host, or its scheme is not http or
// https. Such a job fails without being admitted and is never retried.
var ErrBadURL = errors.New("bad URL")

// errTooManyRedirects is the redirect policy's refusal.
var errTooManyRedirects = errors.New("too many redirects")

// StatusError is the error of a fetch whose final response was not a 2xx.
// errors.Is(err, ErrPermanent) holds for the statuses that retrying cannot
// fix: 3xx left unfollowed, and 4xx except 408, 425 and 429; also 501 and
// 505.
type StatusError struct {
	Code   int
	Status string // as the server sent it, such as "404 Not Found"
}

// Error returns "HTTP 404 Not Found".
func (e *StatusError) Error() string { return "HTTP " + e.Status }

// Is reports whether target is ErrPermanent and the status is permanent.
func (e *StatusError) Is(target error) bool {
	return target == ErrPermanent && permanentStatus(e.Code)
}

// permanentStatus reports whether retrying a request answered with code
// is pointless.
func permanentStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return true
	}
	return code >= 300 && code < 500
}

// HTTPResult is what a fetch attempt adds to its Result.
type HTTPResult struct {
	// Method and URL say what was fetched; URL has its credentials
	// redacted (see RedactURL).
	Method, URL string
	// StatusCode is the final response's status, or 0 if none came.
	StatusCode int
	// Status is the status line's text, such as "200 OK".
	Status string
	// Proto is the protocol of the response, such as "HTTP/2.0".
	Proto string
	// Bytes counts the body bytes kept: written to Result.Stdout or to
	// File. The body of a failed response is not counted.
	Bytes int64
	// File is the file the body was written to, with an output directory.
	File string
	// PauseUntil is set when this response made the executor pause all
	// admissions (429 or 503 with Retry-After or without, or rate-limit
	// headers saying the quota is spent); PauseReason says which.
	PauseUntil  time.Time
	PauseReason string
}

// Pauser stops admissions until an instant; *throttle.Limiter is one.
type Pauser interface {
	PauseUntil(t time.Time, reason string)
}

// FetchOptions configure a FetchExecutor.
type FetchOptions struct {
	// Client sends the requests; required. NewHTTPClient makes a suitable
	// one.
	Client *http.Client
	// URL is the URL template: the job's item goes wherever a placeholder
	// is (see Template for the placeholders). Empty: each item is a URL.
	URL string
	// Method is the request method; empty means GET, or POST with data.
	Method string
	// Headers are "Name: value" lines, added in order; values may hold
	// placeholders. A Host header sets the request's host; an empty
	// User-Agent sends none.
	Headers []string
	// Data is the request body, sent when HasData is set; it may hold
	// placeholders. If it starts with '@' (after expansion) the rest names
	// a file whose content is sent. Without a Content-Type header,
	// application/x-www-form-urlencoded is sent, as curl does.
	Data    string
	HasData bool
	// UserAgent is sent unless Headers set one; empty sends Go's default.
	UserAgent string
	// Timeout bounds each attempt, body included; 0 means none.
	Timeout time.Duration
	// OutputDir, if set, receives one file per successful item, named by
	// OutputName, instead of Result.Stdout. Files appear whole: each is
	// written to a temporary file in the same directory and renamed.
	OutputDir string
	// OutputName is the file name template within OutputDir; empty means
	// "{#}". A name that is not local to the directory fails the item.
	OutputName string
	// Pauser receives the server's requests to stop admissions (429/503
	// Retry-After, spent rate-limit quota); nil ignores them.
	Pauser Pauser
	// IgnoreServerLimits ignores rate-limit headers (RateLimit-*,
	// X-RateLimit-*). Retry-After on a 429 or 503 is always honoured.
	IgnoreServerLimits bool
	// Backoff is the first pause after a 429 or 503 that gives no
	// Retry-After; 0 means DefaultBackoff.
	Backoff time.Duration
	// Clock tells the time for Retry-After and rate-limit headers; nil
	// means the system clock. Use the limiter's.
	Clock Clock
	// SpillLimit and TempDir configure each body's Capture; see NewCapture.
	SpillLimit int64
	TempDir    string
}

// FetchExecutor fetches one URL per job over HTTP, in process. The body
// of a 2xx response goes whole into Result.Stdout (a Capture, spilling to
// disk past SpillLimit) or into a file in OutputDir; any other status
// fails the job with a StatusError. The server has the last word on pace:
// a 429 or 503 pauses all admissions until its Retry-After (or for a
// doubling backoff without one), and rate-limit headers that say the quota
// is spent pause them until it resets.
//
// Credentials never leave the executor: Job.Argv is the method and the
// redacted URL, and every error has URL userinfo, secret query values and
// secret header values (see IsSecretHeader) replaced by Redacted.
//
// Make one with NewFetchExecutor. It is safe for concurrent use.
type FetchExecutor struct {
	opts    FetchOptions
	url     []part // nil: the item is the URL
	name    []part
	headers []headerTemplate
	data    []part
	clock   Clock
	bufs    sync.Pool

	mu      sync.Mutex
	boLast  time.Duration // the last backoff pause; 0 after a success
	boUntil time.Time     // when it ends
}

// headerTemplate is one -H line, split.
type headerTemplate struct {
	name   string // canonical
	value  []part
	secret bool
}

// NewFetchExecutor checks opts and returns an executor. Its errors are
// the user's: a bad header line or method, or a URL template that no
// placeholder makes differ from item to item.
func NewFetchExecutor(opts FetchOptions) (*FetchExecutor, error) {
	if opts.Client == nil {
		return nil, errors.New("runner: fetch: no HTTP client")
	}
	if opts.Method == "" {
		opts.Method = http.MethodGet
		if opts.HasData {
			opts.Method = http.MethodPost
		}
	}
	if !isToken(opts.Method) {
		return nil, fmt.Errorf("runner: fetch: bad method %q", opts.Method)
	}
	if opts.OutputName == "" {
		opts.OutputName = "{#}"
	}
	if opts.Backoff <= 0 {
		opts.Backoff = DefaultBackoff
	}
	e := &FetchExecutor{opts: opts, clock: opts.Clock}
	if e.clock == nil {
		e.clock = systemClock{}
	}
	e.bufs.New = func() any { b := make([]byte, 32<<10); return &b }
	varies := false
	if opts.URL != "" {
		e.url = parseArg(opts.URL)
		varies = hasPlaceholder(e.url)
	}
	for _, line := range opts.Headers {
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || !isToken(name) {
			return nil, fmt.Errorf("runner: fetch: bad header %q, want \"Name: value\"", redactHeaderLine(line))
		}
		h := headerTemplate{
			name:   http.CanonicalHeaderKey(name),
			value:  parseArg(strings.TrimSpace(value)),
			secret: IsSecretHeader(name),
		}
		varies = varies || hasPlaceholder(h.value)
		e.headers = append(e.headers, h)
	}
	if opts.HasData {
		if opts.Data == "@-" {
			return nil, errors.New("runner: fetch: data from stdin (@-) is not supported: stdin holds the items")
		}
		e.data = parseArg(opts.Data)
		varies = varies || hasPlaceholder(e.data)
	}
	if opts.URL != "" && !varies {
		return nil, fmt.Errorf("runner: fetch: URL template %q has no placeholder such as {}: "+
			"every item would fetch the same thing (give no template to read one URL per item)", RedactRawURL(opts.URL))
	}
	if opts.OutputDir != "" {
		e.name = parseArg(opts.OutputName)
	}
	return e, nil
}

// ShowItem returns item as it may be shown, for instance as a --tag
// prefix: URL credentials redacted (see RedactRawURL), or Redacted
// altogether when the item goes into a secret header, as with
// -H 'Authorization: Bearer {}'.
func (e *FetchExecutor) ShowItem(item string) string {
	for _, h := range e.headers {
		if h.secret && usesItem(h.value) {
			return Redacted
		}
	}
	return RedactRawURL(item)
}

// usesItem reports whether parts hold a placeholder made from the item
// (all but {#} and {%}).
func usesItem(parts []part) bool {
	for _, p := range parts {
		if p.ph != phNone && p.ph != phSeq && p.ph != phSlot {
			return true
		}
	}
	return false
}

// redactHeaderLine hides the value of a header line for error messages.
func redactHeaderLine(line string) string {
	if name, _, ok := strings.Cut(line, ":"); ok {
		return name + ": " + Redacted
	}
	if len(line) > 20 {
		return line[:8] + "..."
	}
	return line
}

// hasPlaceholder reports whether parts hold a placeholder.
func hasPlaceholder(parts []part) bool {
	for _, p := range parts {
		if p.ph != phNone {
			return true
		}
	}
	return false
}

// expand substitutes job's values into parts.
func expand(parts []part, job *Job) string {
	if len(parts) == 1 && parts[0].ph == phNone {
		return parts[0].lit
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.value(job.Item, job.Seq, job.Slot))
	}
	return b.String()
}

// fetchSpec is one attempt's request, built from the job.
type fetchSpec struct {
	raw      string
	url      *url.URL
	redURL   string
	header   http.Header
	host     string
	data     string
	dataFile string
	out      string // output file path, with OutputDir
	red      *Redactor
}

// build makes job's request. Its errors are permanent.
func (e *FetchExecutor) build(job *Job) (*fetchSpec, error) {
	raw := strings.TrimSpace(job.Item)
	if e.url != nil {
		raw = expand(e.url, job)
	}
	u, err := parseFetchURL(raw)
	if err != nil {
		return nil, Permanent(fmt.Errorf("job %d: %w", job.Seq, err))
	}
	s := &fetchSpec{raw: raw, url: u, redURL: RedactURL(u), header: make(http.Header, len(e.headers)+1), red: &Redactor{}}
	s.red.AddURL(u)
	for _, h := range e.headers {
		v := expand(h.value, job)
		if h.secret {
			s.red.Add(v)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, Permanent(fmt.Errorf("job %d: header %s: value holds a line break or NUL", job.Seq, h.name))
		}
		if h.name == "Host" {
			s.host = v
			continue
		}
		s.header[h.name] = append(s.header[h.name], v)
	}
	if _, ok := s.header["User-Agent"]; !ok && e.opts.UserAgent != "" {
		s.header["User-Agent"] = []string{e.opts.UserAgent}
	}
	if e.opts.HasData {
		d := expand(e.data, job)
		if name, ok := strings.CutPrefix(d, "@"); ok {
			s.dataFile = name
		} else {
			s.data = d
		}
		if _, ok := s.header["Content-Type"]; !ok {
			s.header["Content-Type"] = []string{"application/x-www-form-urlencoded"}
		}
	}
	if e.name != nil {
		name := expand(e.name, job)
		if !filepath.IsLocal(name) {
			return nil, Permanent(fmt.Errorf("job %d: output file name %q is not inside the output directory", job.Seq, s.red.String(name)))
		}
		s.out = filepath.Join(e.opts.OutputDir, name)
	}
	return s, nil
}

// parseFetchURL parses raw and checks that it can be fetched. Its errors
// wrap ErrBadURL and show raw redacted.
func parseFetchURL(raw string) (*url.URL, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w %q: %s", ErrBadURL, RedactRawURL(raw), why)
	}
	if raw == "" {
		return nil, bad("empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message holds the whole URL
		}
		return nil, bad(RedactText(err.Error()))
	}
	switch {
	case u.Scheme == "":
		return nil, bad("no scheme (want http:// or https://)")
	case u.Opaque != "" && strings.Contains(u.Opaque, "@"):
		// "user:pass@host/x": what parsed as a scheme is a user name.
		return nil, bad("no scheme (want http:// or https://)")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, bad(fmt.Sprintf("unsupported scheme %q (want http or https)", u.Scheme))
	case u.Opaque != "":
		return nil, bad("want scheme://host/...")
	case u.Host == "":
		return nil, bad("no host")
	}
	return u, nil
}

// Prepare checks that the job can be fetched and sets Job.Argv to the
// method and the redacted URL. A bad URL, a missing data file or an output
// name outside the directory fails the job before admission.
func (e *FetchExecutor) Prepare(job *Job) error {
	s, err := e.build(job)
	if err != nil {
		return err
	}
	if s.dataFile != "" {
		if _, err := os.Stat(s.dataFile); err != nil {
			return Permanent(fmt.Errorf("job %d: data file: %w", job.Seq, err))
		}
	}
	job.Argv = []string{e.opts.Method, s.redURL}
	return nil
}

// Execute fetches the job's URL and returns how it went: Result.HTTP is
// always set; ExitCode is 0 for a 2xx, 1 for another status and -1 when no
// response came; Err says why the job failed (a StatusError for a status,
// redacted transport errors otherwise). On 429 and 503 and on spent
// rate-limit quotas it pauses the Pauser before it returns, so that the
// retry the pool may queue is admitted only after the pause.
func (e *FetchExecutor) Execute(ctx context.Context, job *Job) *Result {
	res := &Result{Job: *job, ExitCode: -1, Timeout: e.opts.Timeout}
	h := &HTTPResult{Method: e.opts.Method}
	res.HTTP = h
	s, err := e.build(job)
	if err != nil {
		res.Err = err
		return res
	}
	h.URL = s.redURL
	fail := func(err error) {
		res.Err = fmt.Errorf("job %d: %s %s: %w", job.Seq, e.opts.Method, s.redURL, s.red.Error(err))
	}

	jctx := ctx
	if e.opts.Timeout > 0 {
		var cancel context.CancelFunc
		jctx, cancel = context.WithTimeoutCause(ctx, e.opts.Timeout, errTimeout)
		defer cancel()
	}
	req, err := e.request(jctx, s)
	if err != nil {
		fail(err)
		return res
	}
	resp, err := e.opts.Client.Do(req)
	if err != nil {
		if errors.Is(context.Cause(jctx), errTimeout) {
			res.TimedOut = true
			return res
		}
		fail(clientError(err, s.url))
		return res
	}
	defer resp.Body.Close()
	h.StatusCode, h.Status, h.Proto = resp.StatusCode, resp.Status, resp.Proto
	if h.Status == "" {
		h.Status = strconv.Itoa(resp.StatusCode)
	}
	e.serverSignals(resp, h)

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		res.ExitCode = 1
		res.Stderr = NewCapture(errorBodyLimit, e.opts.TempDir)
		body, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
		res.Stderr.Write([]byte(s.red.String(string(body))))
		io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
		res.Err = fmt.Errorf("job %d: %s %s: %w", job.Seq, e.opts.Method, s.redURL,
			&StatusError{Code: resp.StatusCode, Status: h.Status})
		return res
	}

	var n int64
	if s.out != "" {
		n, err = e.writeFile(s.out, resp.Body)
		if err == nil {
			h.File = s.out
		}
	} else {
		res.Stdout = NewCapture(e.opts.SpillLimit, e.opts.TempDir)
		n, err = e.copy(res.Stdout, resp.Body)
		if err == nil {
			err = res.Stdout.Err()
		}
	}
	h.Bytes = n
	if err != nil {
		if errors.Is(context.Cause(jctx), errTimeout) {
			res.TimedOut = true
			return res
		}
		fail(fmt.Errorf("read body: %w", err))
		return res
	}
	res.ExitCode = 0
	return res
}

// request makes the HTTP request for s.
func (e *FetchExecutor) request(ctx context.Context, s *fetchSpec) (*http.Request, error) {
	var body io.Reader
	if e.opts.HasData && s.dataFile == "" {
		body = strings.NewReader(s.data)
	}
	req, err := http.NewRequestWithContext(ctx, e.opts.Method, s.raw, body)
	if err != nil {
		return nil, err
	}
	req.Header = s.header
	if s.host != "" {
		req.Host = s.host
	}
	if s.dataFile != "" {
		if err := setFileBody(req, s.dataFile); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// setFileBody makes the content of the file called name req's body,
// reopened for redirects that resend it.
func setFileBody(req *http.Request, name string) error {
	open := func() (io.ReadCloser, error) {
		f, err := os.Open(name)
		if err != nil {
			return nil, Permanent(fmt.Errorf("data file: %w", err))
		}
		return f, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return Permanent(fmt.Errorf("data file: %w", err))
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("data file: %w", err)
	}
	req.Body, req.GetBody = f, open
	req.ContentLength = fi.Size()
	if fi.Size() == 0 {
		req.Body = http.NoBody
		f.Close()
	}
	return nil
}

// clientError strips the *url.Error that http.Client wraps around every
// failure (its message repeats the method and URL already in the job's
// error) but keeps the URL if a redirect led elsewhere. Redirect loops and
// certificate failures become permanent.
func clientError(err error, orig *url.URL) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	inner := ue.Err
	if ue.URL != "" && RedactRawURL(ue.URL) != RedactURL(orig) {
		inner = fmt.Errorf("after redirect to %s: %w", RedactRawURL(ue.URL), inner)
	}
	var certErr *tls.CertificateVerificationError
	if errors.Is(err, errTooManyRedirects) || errors.As(err, &certErr) {
		inner = Permanent(inner)
	}
	return inner
}

// serverSignals pauses admissions when resp asks for it, and records the
// pause in h.
func (e *FetchExecutor) serverSignals(resp *http.Response, h *HTTPResult) {
	now := e.clock.Now()
	var until time.Time
	var reason string
	later := func(t time.Time, why string) {
		if t.After(until) {
			until, reason = t, why
		}
	}
	var rl RateLimit
	haveRL := false
	if !e.opts.IgnoreServerLimits {
		rl, haveRL = ParseRateLimit(resp.Header, now)
		if haveRL && rl.Remaining == 0 && rl.Reset.After(now) {
			later(rl.Reset, rl.Header+": 0")
		}
	}
	code := resp.StatusCode
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		if t, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			e.resetBackoff()
			later(t, fmt.Sprintf("%d Retry-After: %s", code, strings.TrimSpace(resp.Header.Get("Retry-After"))))
		} else if until.IsZero() {
			t, d := e.backoff(now)
			later(t, fmt.Sprintf("%d without Retry-After: backoff %v", code, d))
		}
	} else if code >= 200 && code <= 299 {
		e.resetBackoff()
	}
	if until.IsZero() || !until.After(now) {
		return
	}
	h.PauseUntil, h.PauseReason = until, reason
	if e.opts.Pauser != nil {
		e.opts.Pauser.PauseUntil(until, "server: "+reason)
	}
}

// backoff returns the end of the pause for a 429/503 without Retry-After
// at now, and its length. While an earlier backoff pause is still in
// force, answers to requests sent before it began share it; after it, the
// next one is twice as long, up to MaxBackoff.
func (e *FetchExecutor) backoff(now time.Time) (time.Time, time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now.Before(e.boUntil) {
		return e.boUntil, e.boLast
	}
	d := e.opts.Backoff
	if e.boLast > 0 {
		d = min(2*e.boLast, MaxBackoff)
	}
	e.boLast, e.boUntil = d, now.Add(d)
	return e.boUntil, d
}

// resetBackoff makes the next backoff the first again.
func (e *FetchExecutor) resetBackoff() {
	e.mu.Lock()
	e.boLast, e.boUntil = 0, time.Time{}
	e.mu.Unlock()
}

// copy copies src to dst through a pooled buffer.
func (e *FetchExecutor) copy(dst io.Writer, src io.Reader) (int64, error) {
	bp := e.bufs.Get().(*[]byte)
	defer e.bufs.Put(bp)
	return io.CopyBuffer(dst, src, *bp)
}

// writeFile writes body to path atomically: into a new temporary file in
// the same directory, renamed over path once the body is complete. On any
// error the temporary file is removed and path is left as it was.
func (e *FetchExecutor) writeFile(path string, body io.Reader) (int64, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return 0, Permanent(fmt.Errorf("output: %w", err))
	}
	f, err := createTemp(dir, filepath.Base(path))
	if err != nil {
		return 0, fmt.Errorf("output: %w", err)
	}
	n, err := e.copy(f, body)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("output: %w", cerr)
	}
	if err == nil {
		if rerr := os.Rename(f.Name(), path); rerr != nil {
			err = fmt.Errorf("output: %w", rerr)
		}
	}
	if err != nil {
		os.Remove(f.Name())
		return n, err
	}
	return n, nil
}

// createTemp creates a new hidden file next to where base will go. Unlike
// os.CreateTemp it asks for mode 0666, so the final file gets the usual
// permissions under the umask.
func createTemp(dir, base string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, "."+base+".pace-"+strconv.FormatUint(rand.Uint64()&0xffffffffff, 36)+".tmp")
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("runner: create temporary file in %s: too many collisions", dir)
}

// HTTPClientOptions configure NewHTTPClient.
type HTTPClientOptions struct {
	// Conns is how many connections per host are kept open for reuse;
	// set it to the jobs in flight. Values below 2 mean 2.
	Conns int
	// Insecure skips the verification of servers' certificates.
	Insecure bool
	// MaxRedirects caps the redirects followed; 0 means
	// DefaultMaxRedirects, negative follows none.
	MaxRedirects int
	// TLS, if set, is the base TLS configuration (cloned), for instance
	// with extra root certificates.
	TLS *tls.Config
}

// NewHTTPClient returns the client a FetchExecutor wants: one connection
// pool sized to the jobs in flight, keep-alive, HTTP/2 when the server
// offers it over TLS, proxies from the environment (HTTPS_PROXY,
// HTTP_PROXY, NO_PROXY), and a redirect policy that follows at most
// MaxRedirects and drops secret headers (see IsSecretHeader) when a
// redirect leaves the original host or goes from https to http.
func NewHTTPClient(opts HTTPClientOptions) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	conns := max(opts.Conns, 2)
	t.MaxIdleConnsPerHost = conns
	t.MaxIdleConns = max(conns, 100)
	if opts.TLS != nil {
		t.TLSClientConfig = opts.TLS.Clone()
	}
	if opts.Insecure {
		if t.TLSClientConfig == nil {
			t.TLSClientConfig = &tls.Config{}
		}
		t.TLSClientConfig.InsecureSkipVerify = true
	}
	t.ForceAttemptHTTP2 = true
	maxRedirects := opts.MaxRedirects
	if maxRedirects == 0 {
		maxRedirects = DefaultMaxRedirects
	}
	return &http.Client{
		Transport: t,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if maxRedirects < 0 {
				return http.ErrUseLastResponse
			}
			if len(via) > maxRedirects {
				return fmt.Errorf("%w (followed %d)", errTooManyRedirects, maxRedirects)
			}
			first := via[0]
			if !sameHost(req.URL, first.URL) || first.URL.Scheme == "https" && req.URL.Scheme != "https" {
				for name := range req.Header {
					if IsSecretHeader(name) {
						req.Header.Del(name)
					}
				}
			}
			return nil
		},
	}
}

// sameHost reports whether a and b name the same host and port.
func sameHost(a, b *url.URL) bool {
	return strings.EqualFold(a.Hostname(), b.Hostname()) && a.Port() == b.Port()
}

// isToken reports whether s is an HTTP token (RFC 9110 5.6.2), as header
// names and methods must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
