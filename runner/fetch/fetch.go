// Package fetch fetches one URL per job over HTTP, in process, for pace's
// pool: an Executor that keeps each body whole (in memory, a temporary
// file, or a file of its own), listens to the server's 429s and rate-limit
// headers, and never shows a credential.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pace-cli/pace/internal/redact"
	"github.com/pace-cli/pace/internal/tmpl"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/pacehttp"
)

// DefaultMaxServerPause is the longest pause a server may ask for (with
// Retry-After or rate-limit headers) before the item fails instead.
const DefaultMaxServerPause = pacehttp.DefaultMaxServerPause

// DefaultMaxBody is the largest body kept per item by default.
const DefaultMaxBody = 4 << 30

// errorBodyLimit is how much of a failed response's body Result.Stderr
// keeps; drainLimit is how much more is read so the connection can be
// reused.
const (
	errorBodyLimit = 4 << 10
	drainLimit     = 256 << 10
)

// errBadURL is wrapped by the error of a job whose URL cannot be fetched:
// it does not parse, has no scheme or host, or its scheme is not http or
// https. Such a job fails without being admitted and is never retried.
var errBadURL = errors.New("bad URL")

// errTimeout is the cause of a job context that ran past its timeout.
var errTimeout = errors.New("request timed out")

// errBodyTooLarge is the error of a body past Options.MaxBody.
var errBodyTooLarge = errors.New("body too large")

// statusError is the error of a fetch whose final response was not a 2xx.
// errors.Is(err, runner.ErrPermanent) holds for the statuses that retrying
// cannot fix: 3xx left unfollowed, and 4xx except 408, 425 and 429; also
// 501 and 505.
type statusError struct {
	Code   int
	Status string // as the server sent it, such as "404 Not Found", redacted and fit to print (see printable)
}

// Error returns "HTTP 404 Not Found".
func (e *statusError) Error() string { return "HTTP " + e.Status }

// Is reports whether target is runner.ErrPermanent and the status is
// permanent.
func (e *statusError) Is(target error) bool {
	return target == runner.ErrPermanent && permanentStatus(e.Code)
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

// Options configure an Executor.
type Options struct {
	// Client sends the requests; required. NewClient makes a suitable one.
	Client *http.Client
	// URL is the URL template: the job's item goes wherever a placeholder
	// is (see package tmpl). Empty: each item is a URL.
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
	// "{#}". A name that is not local to the directory, or names a
	// directory, fails the item before it is sent.
	OutputName string
	// OutputFile, if set, is the one file the body of the one item goes
	// to (pace fetch -o FILE), written whole as OutputDir's files are.
	OutputFile string
	// MaxBody fails an item whose body grows past it; 0 means
	// DefaultMaxBody.
	MaxBody int64
	// Backend admits the jobs the pool did not admit (a job without an
	// Admission) and receives the server's requests to stop admissions
	// (429/503 Retry-After, spent rate-limit quota); nil means one
	// without rules. Use replaces it.
	Backend throttle.Backend
	// Learn and Adopt make the executor learn the server's rule from its
	// refusals, and keep the rules it publishes (see package learn).
	Learn, Adopt bool
	// MaxServerPause is the longest pause a server may ask for: a longer
	// one fails the item instead of pausing, with an error holding a
	// *pacehttp.PauseTooLong, on which a pool's user stops admissions (it
	// is the server's "stop": every later call would be refused alike); 0
	// means DefaultMaxServerPause.
	MaxServerPause time.Duration
	// OnPause, if set, is told of every pause a response starts, with its
	// length and reason, so that a long one can be announced.
	OnPause func(d time.Duration, reason string)
	// IgnoreServerLimits ignores rate-limit headers (rateLimit-*,
	// X-rateLimit-*). Retry-After on a 429 or 503 is always honoured.
	IgnoreServerLimits bool
	// Backoff is the first pause after a 429 or 503 that gives no
	// Retry-After; 0 means defaultBackoff.
	Backoff time.Duration
	// SecretParams are more query parameter names whose values are hidden
	// wherever a URL is shown, besides the built-in ones (see package
	// redact).
	SecretParams []string
	// CostFrom, if set, reads each call's true cost from its 2xx response
	// and corrects the cost the rules counted (Result.Cost). A response
	// that does not say keeps the estimate: its item does not fail, and
	// Use's hint is told once.
	CostFrom pacehttp.CostSource
	// SpillLimit and TempDir configure each body's Capture; see
	// runner.NewCapture.
	SpillLimit int64
	TempDir    string
}

// Executor fetches one URL per job over HTTP, in process, through a
// pacehttp.Transport: the one path by which pace listens to servers. The body of a
// 2xx response goes whole into Result.Stdout (a Capture, spilling to disk
// past SpillLimit) or into a file; any other status fails the job with a
// statusError. The server has the last word: a 429 or 503 pauses all
// admissions until its Retry-After (or for a doubling backoff without
// one), and rate-limit headers that say the quota is spent pause them
// until it resets.
//
// Credentials never leave the executor: Job.Argv is the method and the
// redacted URL, and every error has URL userinfo, secret query values and
// secret header values replaced by redact.Placeholder.
//
// Make one with New. It is safe for concurrent use.
type Executor struct {
	opts    Options
	url     *tmpl.Template // nil: the item is the URL
	name    *tmpl.Template
	headers []headerTemplate
	fixed   *headers // the headers of every job, if no placeholder makes them differ
	data    *tmpl.Template
	red     *redact.Redactor
	bufs    sync.Pool
	tr      *pacehttp.Transport
	client  *http.Client // opts.Client through tr

	// names holds, for an output name template that may give two items
	// one name, each output file of the run (a 128-bit hash of its path:
	// 24 bytes a file, not the path) and the job that writes it, so that
	// a second item refuses it rather than replace the first's body.
	namesMu sync.Mutex
	names   map[[2]uint64]int64
	seeds   [2]maphash.Seed

	// swept holds each directory a body has been written to (a string
	// key): the first write there removes the temporary files that an
	// earlier pace, killed, left behind (outfile.Sweep).
	swept sync.Map

	// streams holds each -d @FILE that is a pipe or a device, read
	// whole by the first request that sends it (*streamBody by name).
	streams sync.Map
}

// headerTemplate is one -H line, split.
type headerTemplate struct {
	name   string // canonical
	value  *tmpl.Template
	secret bool
}

// New checks opts and returns an executor. Its errors are the user's: a
// bad header line or method, a header without placeholders whose value
// holds a line break, or a URL template that cannot make a URL (no
// scheme or host) or that no placeholder makes differ from item to item.
func New(opts Options) (*Executor, error) {
	if opts.Client == nil {
		return nil, errors.New("fetch: no HTTP client")
	}
	if opts.Method == "" {
		opts.Method = http.MethodGet
		if opts.HasData {
			opts.Method = http.MethodPost
		}
	}
	if !isToken(opts.Method) {
		return nil, fmt.Errorf("bad method %q: want a word such as GET, POST or PUT", opts.Method)
	}
	if opts.OutputName == "" {
		opts.OutputName = "{#}"
	}
	opts.Backoff = max(opts.Backoff, 0)
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.MaxServerPause <= 0 {
		opts.MaxServerPause = DefaultMaxServerPause
	}
	e := &Executor{opts: opts, red: redact.New(opts.SecretParams...)}
	b := opts.Backend
	if b == nil {
		b, _ = throttle.New(throttle.Options{})
	}
	e.Use(b, nil, nil)
	e.bufs.New = func() any { b := make([]byte, 32<<10); return &b }
	varies := false
	if opts.URL != "" {
		e.url = tmpl.Parse(opts.URL)
		varies = e.url.HasPlaceholder()
		if err := checkURLTemplate(opts.URL, e.red); err != nil {
			return nil, err
		}
	}
	for _, line := range opts.Headers {
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || !isToken(name) {
			return nil, fmt.Errorf("bad header %q: want \"Name: value\"", redactHeaderLine(line))
		}
		h := headerTemplate{
			name:   http.CanonicalHeaderKey(name),
			value:  tmpl.Parse(strings.TrimSpace(value)),
			secret: redact.IsSecretHeader(name),
		}
		varies = varies || h.value.HasPlaceholder()
		e.headers = append(e.headers, h)
	}
	if opts.HasData {
		if opts.Data == "@-" {
			return nil, errors.New("data from stdin (-d @-) is not supported: stdin holds the items")
		}
		e.data = tmpl.Parse(opts.Data)
		varies = varies || e.data.HasPlaceholder()
	}
	if opts.URL != "" && !varies && opts.OutputFile == "" {
		return nil, fmt.Errorf("URL template %q has no placeholder such as {}: "+
			"every item would fetch the same thing (give no template to read one URL per item)", e.red.RawURL(opts.URL))
	}
	if opts.OutputDir != "" {
		e.name = tmpl.Parse(opts.OutputName)
		// The default, {#}, names every item apart; so does any other
		// single {#} among literal text, unless ".." can undo it.
		if !e.name.SeqOnly() || strings.Contains(opts.OutputName, "..") {
			e.names = map[[2]uint64]int64{}
			e.seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
		}
	}
	if !slices.ContainsFunc(e.headers, func(h headerTemplate) bool { return h.value.HasPlaceholder() }) {
		// The same for every job: expanded once, and a line break in
		// one is refused before anything runs, not job after job.
		var err error
		if e.fixed, err = e.expandHeaders(&runner.Job{}); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// checkURLTemplate refuses, before anything runs, a URL template whose
// literal start cannot make a URL: no http:// or https:// scheme, or no
// host after it.
func checkURLTemplate(t string, red *redact.Redactor) error {
	lit := t
	if i := strings.Index(t, "{"); i >= 0 && tmpl.Parse(t[i:]).HasPlaceholder() {
		lit = t[:i]
	}
	if lit == "" {
		return nil // the item makes the URL, scheme and all
	}
	bad := func(why string) error {
		return fmt.Errorf("URL template %q: %s", red.RawURL(t), why)
	}
	scheme, rest, ok := strings.Cut(lit, "://")
	if !ok {
		if !strings.Contains(lit, ":") && len(lit) < len(t) && strings.HasPrefix(t[len(lit):], "{") && !strings.ContainsAny(lit, "/.") {
			return nil // "{}" or "{1}://..." : the scheme comes from the item
		}
		return bad("no scheme: want it to start with http:// or https://, such as http://" + red.RawURL(strings.TrimPrefix(t, "//")))
	}
	switch strings.ToLower(scheme) {
	case "http", "https":
	default:
		return bad(fmt.Sprintf("scheme %q: want http or https", scheme))
	}
	// The host is literal when a '/', '?' or '#' ends it within the
	// literal start, or when the whole template is literal.
	host, _, ended := strings.Cut(rest, "/")
	if i := strings.IndexAny(host, "?#"); i >= 0 {
		host, ended = host[:i], true
	}
	if (ended || len(lit) == len(t)) && host == "" {
		return bad("no host after the scheme")
	}
	return nil
}

// Use makes b the backend behind the executor's transport, and returns
// the transport: its Backend is what the pool should admit through (b,
// with the rules learned from the server in front). hint, if set, is told
// what is worth saying once; remaining, if set, how many requests are
// still to come, or -1 if that is not known (pacehttp.Options.Remaining).
// Call it before the first Execute.
func (e *Executor) Use(b throttle.Backend, hint func(string), remaining func() int64) *pacehttp.Transport {
	base := e.opts.Client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	e.tr = pacehttp.New(b, pacehttp.Options{
		Base: base, CostFrom: e.opts.CostFrom, Learn: e.opts.Learn, Adopt: e.opts.Adopt, Hint: hint, Remaining: remaining,
		IgnoreServerLimits: e.opts.IgnoreServerLimits, MaxServerPause: e.opts.MaxServerPause,
		Backoff: e.opts.Backoff, OnPause: e.opts.OnPause, FixedMargin: true,
	})
	c := *e.opts.Client
	c.Transport = e.tr
	e.client = &c
	return e.tr
}

// ShowItem returns job's item as it may be shown, for instance as a --tag
// prefix or in a summary's failed items: redact.Placeholder altogether
// when the item goes into a secret header, as with -H 'Authorization:
// Bearer {}'; otherwise with the credentials hidden that the URL made of
// it holds, whether the item is that URL or the template puts the item
// (or a column of it) where a credential goes (http://{}@host/,
// ?api_key={}, http://{1}:{2}@host/), as redact.Redactor.Item does for a
// command's item.
func (e *Executor) ShowItem(job *runner.Job) string {
	for _, h := range e.headers {
		if h.secret && h.value.UsesItem() {
			return redact.Placeholder
		}
	}
	if e.url == nil || !e.url.UsesItem() {
		return e.red.RawURL(job.Item)
	}
	raw, err := e.url.Expand(values(job))
	if err != nil { // the job failed before its URL was made
		return e.red.RawURL(job.Item)
	}
	return e.red.Item([]string{raw}, job.Item)
}

// redactHeaderLine hides the value of a header line for error messages.
func redactHeaderLine(line string) string {
	if name, _, ok := strings.Cut(line, ":"); ok {
		return name + ": " + redact.Placeholder
	}
	if len(line) > 20 {
		return line[:8] + "..."
	}
	return line
}

// values returns job's placeholder values.
func values(job *runner.Job) tmpl.Values {
	return tmpl.Values{Item: job.Item, Columns: job.Cols, Seq: job.Seq, Slot: job.Slot}
}

// spec is one attempt's request, built from the job.
type spec struct {
	raw      string
	url      *url.URL
	redURL   string
	header   http.Header
	host     string
	data     string
	dataFile string
	out      string // output file path
	red      *redact.Redactor
}

// build makes job's request. Its errors are permanent.
func (e *Executor) build(job *runner.Job) (*spec, error) {
	fail := func(err error) (*spec, error) {
		return nil, runner.Permanent(fmt.Errorf("job %d: %w", job.Seq, err))
	}
	raw := strings.TrimSpace(job.Item)
	if e.url != nil {
		var err error
		if raw, err = e.url.Expand(values(job)); err != nil {
			return fail(err)
		}
	}
	h := e.fixed
	if h == nil {
		var err error
		if h, err = e.expandHeaders(job); err != nil {
			return fail(err)
		}
	}
	// The URL may hold what a secret header holds (-H 'X-Api-Key: {}'
	// with the item in the URL too): everything shown of it hides the
	// header's secrets as well as its own.
	u, err := parseURL(raw, h.red)
	if err != nil {
		return fail(err)
	}
	s := &spec{raw: raw, url: u, header: h.header, host: h.host}
	s.red = h.red.With()
	s.red.AddURL(u)
	s.redURL = s.red.String(s.red.URL(u))
	if e.opts.HasData {
		d, err := e.data.Expand(values(job))
		if err != nil {
			return fail(err)
		}
		if name, ok := strings.CutPrefix(d, "@"); ok {
			s.dataFile = name
		} else {
			s.data = d
		}
	}
	switch {
	case e.opts.OutputFile != "":
		s.out = e.opts.OutputFile
	case e.name != nil:
		name, err := e.name.Expand(values(job))
		if err != nil {
			return fail(err)
		}
		// A name that cleans to "." ("a/..") is the directory itself.
		if !filepath.IsLocal(name) || filepath.Clean(name) == "." || strings.HasSuffix(name, "/") {
			return fail(fmt.Errorf("output file name %q is not a file name inside the output directory", s.red.String(name)))
		}
		// A part longer than a file name can be would fail only once the
		// call is spent, as a local write error, which stops the run.
		for part := range strings.SplitSeq(filepath.ToSlash(name), "/") {
			if len(part) > maxNameLen {
				return fail(fmt.Errorf("output file name %q has a part of %d bytes: a file name has at most %d", s.red.String(name), len(part), maxNameLen))
			}
		}
		s.out = filepath.Join(e.opts.OutputDir, name)
		if fi, err := os.Stat(s.out); err == nil && fi.IsDir() {
			return fail(fmt.Errorf("output file %s is a directory", s.red.String(s.out)))
		}
		// A part of the name that another item's file holds (b, then
		// b/x) cannot be made a directory: fail before the call is spent.
		for p := filepath.Dir(name); p != "."; p = filepath.Dir(p) {
			at := filepath.Join(e.opts.OutputDir, p)
			if fi, err := os.Stat(at); err == nil && !fi.IsDir() {
				return fail(fmt.Errorf("output file %s: %s is a file, not a directory", s.red.String(s.out), s.red.String(at)))
			}
		}
		if other, ok := e.claim(s.out, job.Seq); !ok {
			return fail(fmt.Errorf("output file %s is job %d's too: --output-name must give each item a name of its own (with {#}, say)",
				s.red.String(s.out), other))
		}
	}
	return s, nil
}

// maxNameLen is the longest file name (one part of a path) that file
// systems take: NAME_MAX on Linux and the BSDs, 255 UTF-16 units on
// Windows and macOS.
const maxNameLen = 255

// claim records path as job seq's output file, unless another job of the
// run has it: then it returns that job and false. A job may claim its
// own file again (a retry).
func (e *Executor) claim(path string, seq int64) (int64, bool) {
	if e.names == nil {
		return 0, true
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		path = strings.ToLower(path) // names that differ in case only are one file there
	}
	key := [2]uint64{maphash.String(e.seeds[0], path), maphash.String(e.seeds[1], path)}
	e.namesMu.Lock()
	defer e.namesMu.Unlock()
	if other, ok := e.names[key]; ok && other != seq {
		return other, false
	}
	e.names[key] = seq
	return seq, true
}

// Skipped claims the output file of a job that an earlier run did (the
// pool skips it on --resume), so that no item of this run replaces it.
func (e *Executor) Skipped(job *runner.Job) {
	if e.names == nil { // only with a name template that may repeat
		return
	}
	if name, err := e.name.Expand(values(job)); err == nil {
		e.claim(filepath.Join(e.opts.OutputDir, name), job.Seq)
	}
}

// headers are a request's headers, expanded for one job, or for every
// job when no header holds a placeholder (Executor.fixed): the header is
// only read from then on (http.Client copies it for redirects).
type headers struct {
	header http.Header
	host   string
	red    *redact.Redactor // the executor's, with the secret headers' values
}

// expandHeaders expands the -H lines, the User-Agent and the
// Content-Type of a body for job.
func (e *Executor) expandHeaders(job *runner.Job) (*headers, error) {
	h := &headers{header: make(http.Header, len(e.headers)+2)}
	var secrets []string
	for _, t := range e.headers {
		v, err := t.value.Expand(values(job))
		if err != nil {
			return nil, err
		}
		if t.secret {
			secrets = append(secrets, v)
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("header %s: value holds a line break or NUL", t.name)
		}
		if t.name == "Host" {
			h.host = v
			continue
		}
		h.header[t.name] = append(h.header[t.name], v)
	}
	h.red = e.red.With(secrets...)
	if _, ok := h.header["User-Agent"]; !ok && e.opts.UserAgent != "" {
		h.header["User-Agent"] = []string{e.opts.UserAgent}
	}
	if _, ok := h.header["Content-Type"]; !ok && e.opts.HasData {
		h.header["Content-Type"] = []string{"application/x-www-form-urlencoded"}
	}
	return h, nil
}

// parseURL parses raw and checks that it can be fetched. Its errors wrap
// errBadURL and show raw redacted, the secrets red knows hidden too.
func parseURL(raw string, red *redact.Redactor) (*url.URL, error) {
	bad := func(why string) error {
		return fmt.Errorf("%w %q: %s", errBadURL, red.String(red.RawURL(raw)), red.String(why))
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
		return nil, bad(err.Error())
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
	if p := u.Port(); p != "" {
		// url.Parse takes any digits; a dial would fail each attempt,
		// spending quota on a call that can never be made.
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, bad(fmt.Sprintf("port %s is not a port (want 1 to 65535)", p))
		}
	}
	return u, nil
}

// Prepare checks that the job can be fetched and sets Job.Argv to the
// method and the redacted URL. A bad URL, a missing data file or an output
// name that cannot be written fails the job before admission.
func (e *Executor) Prepare(job *runner.Job) error {
	s, err := e.build(job)
	if err != nil {
		return err
	}
	if s.dataFile != "" {
		fi, err := os.Stat(s.dataFile)
		if err != nil {
			return runner.Permanent(fmt.Errorf("job %d: data file: %w", job.Seq, err))
		}
		if fi.IsDir() { // else each attempt sent its headers, then failed as the network does
			return runner.Permanent(fmt.Errorf("job %d: data file %s is a directory: give a file (-d @FILE)", job.Seq, s.red.String(s.dataFile)))
		}
	}
	job.Argv = []string{e.opts.Method, s.redURL}
	job.Prepared = s
	return nil
}

// Execute fetches the job's URL and returns how it went: Result.HTTP is
// always set; ExitCode is 0 for a 2xx, 1 for another status and -1 when no
// response came; Sent is when the request had been written; Err says why
// the job failed (a statusError for a status, redacted transport errors
// otherwise). On 429 and 503 and on spent rate-limit quotas it pauses the
// Pauser before it returns, so that the retry the pool may queue is
// admitted only after the pause.
func (e *Executor) Execute(ctx context.Context, job *runner.Job) *runner.Result {
	// One allocation for what every attempt needs.
	x := &attempt{res: runner.Result{Job: *job, ExitCode: -1, Timeout: e.opts.Timeout}, h: runner.HTTPInfo{Method: e.opts.Method}}
	res, h, info := &x.res, &x.h, &x.info
	res.HTTP = h
	res.Job.Prepared = nil
	s, ok := job.Prepared.(*spec)
	if !ok { // not prepared by this executor
		var err error
		if s, err = e.build(job); err != nil {
			res.Err = err
			return res
		}
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
	info.Admission = job.Admission // if set, the pool admitted the request
	jctx = pacehttp.WithInfo(jctx, info)
	// Deferred before the body's Close, so run after it: a redirect's
	// cost read from its body is then in its Hop.
	defer func() { h.Hops = hopsOf(info.Hops, s) }()
	req, err := e.request(jctx, s)
	if err != nil {
		fail(err)
		return res
	}
	resp, err := e.client.Do(req)
	res.Sent, res.Answered, res.NewConn, res.Local = info.Sent, info.Answered, info.NewConn, info.Local
	if err != nil {
		if errors.Is(context.Cause(jctx), errTimeout) {
			res.TimedOut = true
			h.Conn = "timeout"
			return res
		}
		h.Conn = runner.ConnCause(err)
		fail(dataChanged(req, s.dataFile, clientError(err, s.url, s.red)))
		return res
	}
	defer resp.Body.Close()
	// The reason phrase is the server's text in pace's lines: it may
	// echo what the request sent, or hold escape sequences.
	h.StatusCode, h.Status, h.Proto = resp.StatusCode, s.red.String(runner.Printable(resp.Status, false)), resp.Proto
	h.Policy, h.PolicyHeader = info.Policy, info.PolicyHeader
	h.RetryAfter, h.PauseUntil, h.PauseReason = info.RetryAfter, info.PauseUntil, info.PauseReason
	if h.Status == "" {
		h.Status = strconv.Itoa(resp.StatusCode)
	}
	if long := pauseTooLong(info.PauseErr); long != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		// The refused item would wait that long: it fails instead.
		res.ExitCode = 1
		io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
		fail(runner.Permanent(pauseError{long}))
		return res
	}

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		res.ExitCode = 1
		res.Stderr = runner.NewCapture(errorBodyLimit, e.opts.TempDir)
		body, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
		res.Stderr.Write([]byte(s.red.String(runner.Printable(string(body), true))))
		io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
		res.Err = fmt.Errorf("job %d: %s %s: %w", job.Seq, e.opts.Method, s.redURL,
			&statusError{Code: resp.StatusCode, Status: h.Status})
		return res
	}

	body := &limitedBody{r: resp.Body, left: e.opts.MaxBody}
	var n int64
	if s.out != "" {
		n, err = e.writeFile(jctx, s.out, body)
		if err == nil {
			h.File = s.out
		}
	} else {
		res.Stdout = runner.NewCapture(e.opts.SpillLimit, e.opts.TempDir)
		n, err = e.copy(res.Stdout, body)
		if err == nil {
			err = res.Stdout.Err()
		}
	}
	if err != nil {
		res.Stdout.Close() // a failed body is not kept
		res.Stdout = nil
		switch {
		case errors.Is(context.Cause(jctx), errTimeout):
			res.TimedOut = true
		case errors.Is(err, errBodyTooLarge):
			fail(runner.Permanent(fmt.Errorf("body larger than %s (--max-body)", formatSize(e.opts.MaxBody))))
		case errors.Is(err, runner.ErrOutput):
			fail(err) // writing here failed: sending again would not help
		default:
			fail(fmt.Errorf("read body: %w", err))
		}
		return res
	}
	h.Bytes = n
	res.ExitCode = 0
	res.Cost = info.Cost // the transport corrected the admission; 0 if the response did not say
	return res
}

// hopsOf returns the calls of hops as the job's result tells them, with
// their URLs redacted as the job's own is; nil if there were none.
func hopsOf(hops []pacehttp.Hop, s *spec) []runner.Hop {
	if len(hops) == 0 {
		return nil
	}
	out := make([]runner.Hop, len(hops))
	for i, h := range hops {
		out[i] = runner.Hop{Start: h.At, Runtime: h.Ended.Sub(h.At), Cost: h.Cost, Method: h.Method, URL: s.red.String(s.red.URL(h.URL)), Again: h.Again}
	}
	return out
}

// pauseError is the failure of an item whose server asked for a pause
// longer than --max-server-pause. It unwraps to the *pacehttp.PauseTooLong,
// which a run that sees it takes as the server's "stop": every later call
// would be refused alike, so it starts no more jobs.
type pauseError struct{ *pacehttp.PauseTooLong }

func (e pauseError) Error() string {
	return fmt.Sprintf("the server asked for a pause of %s (%s), longer than --max-server-pause %s",
		e.Asked.Round(time.Second), e.Reason, e.Max)
}

func (e pauseError) Unwrap() error { return e.PauseTooLong }

// pauseTooLong returns the *pacehttp.PauseTooLong in err's chain, if any
// (apart, so that nothing is allocated for the nil error of most calls).
func pauseTooLong(err error) *pacehttp.PauseTooLong {
	if err == nil {
		return nil
	}
	var long *pacehttp.PauseTooLong
	errors.As(err, &long)
	return long
}

// attempt holds what Execute makes for every attempt, in one allocation.
type attempt struct {
	res  runner.Result
	h    runner.HTTPInfo
	info pacehttp.Info
}

// limitedBody reads a body until it passes a size, then fails.
type limitedBody struct {
	r    io.Reader
	left int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, errBodyTooLarge
	}
	return n, err
}

// formatSize writes n bytes with a binary unit.
func formatSize(n int64) string {
	for _, u := range []struct {
		s string
		n int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.n {
			return strconv.FormatFloat(float64(n)/float64(u.n), 'f', -1, 64) + " " + u.s
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// request makes the HTTP request for s.
func (e *Executor) request(ctx context.Context, s *spec) (*http.Request, error) {
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
		if err := e.setFileBody(ctx, req, s.dataFile); err != nil {
			return nil, err
		}
	}
	return req, nil
}

// copy copies src to dst through a pooled buffer.
func (e *Executor) copy(dst io.Writer, src io.Reader) (int64, error) {
	bp := e.bufs.Get().(*[]byte)
	defer e.bufs.Put(bp)
	return io.CopyBuffer(dst, src, *bp)
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
