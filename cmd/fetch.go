package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/runner"
)

// defaultFetchRetries is --retries for pace fetch: a 429 or 503 is
// retried after the pause the server asks for, so fetch retries by
// default where run does not.
const defaultFetchRetries = 3

// FetchOptions are the inputs of pace fetch.
type FetchOptions struct {
	IO      *IOStreams
	Factory *Factory
	Common  CommonOptions
	// URL is the URL template; empty means each item is a URL.
	URL string
	// Method is -X; empty means GET, or POST with -d.
	Method string
	// Headers are the -H lines, "Name: value".
	Headers []string
	// Data is -d; HasData says whether it was given (it may be empty).
	Data    string
	HasData bool
	// Insecure skips TLS certificate checks.
	Insecure bool
	// OutputDir, if set, gets one file per item, named by OutputName.
	OutputDir  string
	OutputName string
	// IgnoreServerLimits ignores RateLimit-* and X-RateLimit-* headers.
	IgnoreServerLimits bool
}

const fetchLong = `Fetch one URL per input item over HTTP, in process, at most -j at a time,
starting each request only when every rate rule allows it.

Items are lines read from stdin or from -a FILE (NUL-separated with -0).
Without a URL template each item is a URL (blank lines and lines starting
with # are skipped). With one, each item fills its placeholders, as in
pace run: {} the item, {#} the sequence number, {/} its basename, ...
The item is put in as it is, not URL-encoded. A line that is not an http
or https URL fails that item with a message; the others go on.

Requests:
  -X sets the method (GET, or POST with -d). -H 'Name: value' adds a
  header (repeatable; placeholders allowed in the value; 'User-Agent:'
  sends none). -d STRING sends a body, -d @FILE a file's content; both
  take placeholders (-d @{} sends the file named by the item), and without
  a Content-Type header application/x-www-form-urlencoded is sent, as curl
  does. User-Agent is pace/VERSION unless -H sets it. --timeout bounds
  each attempt, body included. Redirects are followed (at most 10);
  credentials are not sent to another host. Proxies come from
  HTTPS_PROXY, HTTP_PROXY and NO_PROXY. HTTP/2 is used when the server
  offers it. --insecure skips certificate checks.

Output:
  A 2xx response's body goes to stdout whole, never mixed with another
  (bodies past a few MB wait in a temporary file, not in memory); -k
  keeps input order. With -o DIR each body goes to its own file instead,
  named by --output-name (default {#}); a file appears only once complete,
  so an interrupted run leaves no partial files. Any other status fails
  the item: "pace: job 3: GET https://...: HTTP 404 Not Found" on stderr
  (with -v also the start of the error body), and the summary counts
  responses by status.

The server has the last word:
  A 429 or 503 pauses ALL admissions until its Retry-After (seconds or an
  HTTP date; without one, 1s doubling up to 1m), then the item is retried:
  the retry is a new admission under every rule. --retries caps the extra
  attempts (default 3 for fetch); 4xx other than 408, 425 and 429 are never
  retried. Rate-limit headers that say the quota is spent (RateLimit:
  r=0, RateLimit-Remaining: 0, X-RateLimit-Remaining: 0) pause admissions
  until the reset they give (RateLimit-Reset in seconds; X-RateLimit-Reset
  in seconds, or an epoch time when it is that large).
  --ignore-server-limits ignores those headers (never Retry-After). The
  summary shows the pauses and what bound the run: a rule, -j, or the
  server.

Credentials never appear in output, logs, summaries or errors: URL user
names and passwords, secret query parameters (api_key, token, sig, ...)
and the values of Authorization, Cookie, *-Key, *-Token and *-Secret
headers are shown as REDACTED.

Interrupts:
  The first Ctrl-C (SIGINT) or SIGTERM starts no more requests and lets
  those in flight finish for up to --grace; a second one aborts them.

` + jobLogHelp + "\n\n" + redisHelp + "\n\n" + exitCodesHelp

const fetchExample = `  # 30 URLs, 5 per second and 12 per 3 seconds, 4 in flight
  pace fetch -r 5/s,12/3s -j 4 -a urls.txt > bodies.txt

  # build the URL from each id; send a token; keep input order
  seq 1000 | pace fetch -r 10/s -k -H "Authorization: Bearer $TOKEN" 'https://api.example.com/items/{}'

  # one file per item, named after it
  pace fetch -r 100/min -o pages --output-name '{/}.html' -a urls.txt

  # POST each JSON file; see what would be sent first
  ls *.json | pace fetch --dry-run -X POST -d @{} -H 'Content-Type: application/json' https://api.example.com/upload`

// NewCmdFetch returns the pace fetch command. runF, if not nil, replaces
// the real run (tests capture the options with it).
func NewCmdFetch(f *Factory, runF func(*FetchOptions) error) *cobra.Command {
	opts := &FetchOptions{IO: f.IOStreams, Factory: f}
	cmd := &cobra.Command{
		Use:     "fetch [flags] [<url-template>]",
		Short:   "Fetch a URL per input item under rate rules",
		Long:    fetchLong,
		Example: fetchExample,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.URL = args[0]
			}
			opts.HasData = cmd.Flags().Changed("data")
			if cmd.Flags().Changed("output-name") && opts.OutputDir == "" {
				return flagErrorf("--output-name needs --output-dir")
			}
			if runF != nil {
				return runF(opts)
			}
			return runFetch(cmd.Context(), opts)
		},
	}
	addFetchFlags(cmd, opts)
	return cmd
}

// addFetchFlags binds the flags of pace fetch: the common ones, with
// fetch's meaning of --timeout and default for --retries, and its own.
func addFetchFlags(cmd *cobra.Command, opts *FetchOptions) {
	addCommonFlags(cmd, &opts.Common, defaultFetchMargin)
	fl := cmd.Flags()
	if t := fl.Lookup("timeout"); t != nil {
		t.Usage = "give up a request after `DURATION`, body included (0: no timeout)"
	}
	if r := fl.Lookup("retries"); r != nil {
		r.Value.Set(strconv.Itoa(defaultFetchRetries))
		r.DefValue = strconv.Itoa(defaultFetchRetries)
		r.Usage = "try a failed request up to `N` more times (429, 5xx, network errors; not other 4xx); each attempt is admitted by the rules again"
	}
	if d := fl.Lookup("dry-run"); d != nil {
		d.Usage = "print each request that would be sent; send nothing, consume no quota"
	}
	fl.StringVarP(&opts.Method, "method", "X", "", "request `METHOD` (default GET, or POST with -d)")
	fl.StringArrayVarP(&opts.Headers, "header", "H", nil, "add header `'NAME: VALUE'`; repeatable, placeholders allowed")
	fl.StringVarP(&opts.Data, "data", "d", "", "send `STRING` as the body, or @FILE's content; placeholders allowed")
	fl.BoolVar(&opts.Insecure, "insecure", false, "do not verify servers' TLS certificates")
	fl.StringVarP(&opts.OutputDir, "output-dir", "o", "", "write each body to its own file in `DIR`, not to stdout")
	fl.StringVar(&opts.OutputName, "output-name", "{#}", "file name `TEMPLATE` in --output-dir")
	fl.BoolVar(&opts.IgnoreServerLimits, "ignore-server-limits", false,
		"ignore RateLimit and X-RateLimit headers (Retry-After is always honoured)")
	cmd.RegisterFlagCompletionFunc("method", cobra.FixedCompletions(
		[]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.RegisterFlagCompletionFunc("header", cobra.NoFileCompletions)
	cmd.RegisterFlagCompletionFunc("output-dir", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
}

// runFetch runs pace fetch with checked options.
func runFetch(ctx context.Context, opts *FetchOptions) error {
	o := &opts.Common
	if err := o.check(); err != nil {
		return err
	}
	ios := opts.IO
	if opts.HasData && !opts.Common.DryRun {
		if name, ok := strings.CutPrefix(opts.Data, "@"); ok && !strings.Contains(name, "{") {
			if _, err := os.Stat(name); err != nil {
				return reportf(ios, ExitUsage, "data file: %v", err)
			}
		}
	}
	if opts.OutputDir != "" && !o.DryRun {
		if err := os.MkdirAll(opts.OutputDir, 0o777); err != nil {
			return reportf(ios, ExitUsage, "output directory: %v", err)
		}
	}

	pauser := &lazyPauser{}
	ex, err := runner.NewFetchExecutor(runner.FetchOptions{
		Client:             runner.NewHTTPClient(runner.HTTPClientOptions{Conns: o.Jobs, Insecure: opts.Insecure}),
		URL:                opts.URL,
		Method:             opts.Method,
		Headers:            opts.Headers,
		Data:               opts.Data,
		HasData:            opts.HasData,
		UserAgent:          "pace/" + version,
		Timeout:            o.Timeout,
		OutputDir:          opts.OutputDir,
		OutputName:         opts.OutputName,
		Pauser:             pauser,
		IgnoreServerLimits: opts.IgnoreServerLimits,
		Clock:              opts.Factory.Clock,
	})
	if err != nil {
		return flagErrorf("%v", err)
	}

	readOpts := runner.ReadOptions{NUL: o.Null}
	if opts.URL == "" {
		readOpts.Skip = isCommentOrBlank
	}
	in, err := openInput(o.Input, ios.In)
	if err != nil {
		return reportf(ios, ExitUsage, "%v", err)
	}
	defer in.close()
	if o.DryRun {
		return dryRun(ctx, ios, o, ex, fetchJobLogCommand, in, readOpts)
	}

	// The session makes the limiter as it always does; this hook hands it
	// to the executor too, which pauses it when the server says so.
	var lim Limiter
	f := *opts.Factory
	f.NewLimiter = func(co *CommonOptions) (Limiter, error) {
		l, err := (&session{f: opts.Factory, opts: co}).limiter()
		if err != nil {
			return nil, err
		}
		lim = l
		if p, ok := l.(runner.Pauser); ok {
			pauser.p.Store(&p)
		} else {
			fmt.Fprintln(ios.ErrOut, "pace: warning: this limiter cannot pause: 429s and rate-limit headers will not hold back other requests")
		}
		return l, nil
	}
	counter := &fetchCounter{Executor: ex, codes: map[int]int64{}}
	s := &session{
		f:           &f,
		opts:        o,
		executor:    counter,
		input:       in,
		readOpts:    readOpts,
		printResult: printFetchResult(o.Tag, o.Verbose, ex.ShowItem),
		logCommand:  fetchJobLogCommand,
		extendSummary: func(sum *Summary) {
			if lim != nil {
				counter.summarize(sum, lim)
			}
		},
	}
	return s.run(ctx)
}

// lazyPauser passes pauses on to the limiter once the session has made
// it; before that (and for limiters that cannot pause) it drops them.
type lazyPauser struct {
	p atomic.Pointer[runner.Pauser]
}

// PauseUntil pauses the limiter, if there is one yet.
func (l *lazyPauser) PauseUntil(t time.Time, reason string) {
	if p := l.p.Load(); p != nil {
		(*p).PauseUntil(t, reason)
	}
}

// printFetchResult returns the printer of a fetch result: the body on
// stdout (tagged with the item as show returns it, with --tag) and, with
// verbose, the start of a failed response's body on stderr.
func printFetchResult(tag, verbose bool, show func(item string) string) func(out, errOut io.Writer, r *runner.Result) {
	print := printOutput(tag)
	return func(out, errOut io.Writer, r *runner.Result) {
		c := *r
		c.Job.Item = show(r.Job.Item)
		if !verbose {
			c.Stderr = nil
		}
		print(out, errOut, &c)
		if b := c.Stderr.Bytes(); len(b) > 0 && b[len(b)-1] != '\n' {
			io.WriteString(errOut, "\n") // an error body is shown as whole lines
		}
	}
}

// fetchCounter counts the responses of every attempt, for the summary.
// It is safe for concurrent use.
type fetchCounter struct {
	runner.Executor
	mu         sync.Mutex
	codes      map[int]int64
	noResponse int64
	bytes      int64
}

// Execute runs the attempt and counts its response.
func (c *fetchCounter) Execute(ctx context.Context, job *runner.Job) *runner.Result {
	r := c.Executor.Execute(ctx, job)
	if h := r.HTTP; h != nil {
		c.mu.Lock()
		if h.StatusCode == 0 {
			c.noResponse++
		} else {
			c.codes[h.StatusCode]++
		}
		c.bytes += h.Bytes
		c.mu.Unlock()
	}
	return r
}

// summarize adds the HTTP counts and the server's pauses to sum, and
// names the server as the binding constraint if its pauses held the run
// back longer than any rule.
func (c *fetchCounter) summarize(sum *Summary, lim Limiter) {
	c.mu.Lock()
	h := &HTTPSummary{Status: map[string]int64{}, NoResponse: c.noResponse, Bytes: c.bytes}
	for code, n := range c.codes {
		h.Status[strconv.Itoa(code)] = n
	}
	c.mu.Unlock()
	st := lim.Stats()
	h.Pauses, h.PausedFor, h.PauseReason = st.Pauses, st.PausedFor, st.PauseReason
	sum.HTTP = h
	if st.PausedFor > 0 {
		longest := time.Duration(0)
		for _, r := range sum.Rules {
			longest = max(longest, r.Waited)
		}
		if st.PausedFor >= longest {
			sum.Binding = "server"
		}
	}
}

// HTTPSummary is pace fetch's part of a Summary: responses by status over
// every attempt, and the pauses the server asked for.
type HTTPSummary struct {
	// Status counts responses by status code ("200", "429", ...).
	Status map[string]int64 `json:"status"`
	// NoResponse counts attempts that got no response: network errors,
	// timeouts, interrupts.
	NoResponse int64 `json:"no_response"`
	// Bytes is the body bytes kept (stdout or files).
	Bytes int64 `json:"bytes"`
	// Pauses counts the times the server stopped admissions (429/503,
	// rate-limit headers); PausedFor is how long admissions waited on
	// them; PauseReason is the latest reason.
	Pauses      int64         `json:"server_pauses"`
	PausedFor   time.Duration `json:"-"`
	PausedSecs  float64       `json:"paused_seconds"`
	PauseReason string        `json:"pause_reason,omitempty"`
}

// writeText writes the HTTP lines of the text summary; binding is the
// summary's binding constraint.
func (h *HTTPSummary) writeText(tw *tabwriter.Writer, binding string) {
	codes := make([]string, 0, len(h.Status))
	for c := range h.Status {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%s ×%d", c, h.Status[c]))
	}
	if h.NoResponse > 0 {
		parts = append(parts, fmt.Sprintf("no response ×%d", h.NoResponse))
	}
	if len(parts) == 0 {
		parts = append(parts, "none")
	}
	// Only the first column is aligned with the lines above: the rest is
	// one last cell, so that it does not widen their columns.
	fmt.Fprintf(tw, "  responses\t%s; %s kept\n", strings.Join(parts, ", "), formatBytes(h.Bytes))
	if h.Pauses > 0 || binding == "server" {
		mark := ""
		if binding == "server" {
			mark = "  binding"
		}
		fmt.Fprintf(tw, "  server\tpaused admissions %d× for %s (last: %s)%s\n", h.Pauses, roundDuration(h.PausedFor),
			strings.TrimPrefix(h.PauseReason, "server: "), mark)
	}
}

// jsonForm returns h ready for encoding.
func (h *HTTPSummary) jsonForm() *HTTPSummary {
	c := *h
	c.PausedSecs = h.PausedFor.Seconds()
	return &c
}

// formatBytes writes n with a binary unit.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
