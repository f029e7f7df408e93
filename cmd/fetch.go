package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/internal/costexpr"
	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/outfile"
	"github.com/pace-cli/pace/internal/spec"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/runner/fetch"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/pacehttp"
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
	// MaxBody fails an item whose body grows past it.
	MaxBody int64
	// MaxServerPause is the longest pause a server may ask for; past it
	// the item fails, and the run starts no more.
	MaxServerPause time.Duration
	// RedactParams are more query parameter names whose values are
	// credentials.
	RedactParams []string
	// RulesFromServer keeps the rules the server publishes
	// (RateLimit-Policy and the like) as rules of the run, with -r.
	RulesFromServer bool
	// CostFrom reads each call's true cost from its response.
	CostFrom pacehttp.CostSource
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
  each attempt, body included. Redirects are followed (at most 10, to
  http and https only), each one a call of its own under the rules (and
  in the job log, a row of its own); credentials are not sent to another
  host. Proxies come from HTTPS_PROXY, HTTP_PROXY and NO_PROXY. HTTP/2 is
  used when the server offers it. --insecure skips certificate checks.

Output:
  A 2xx response's body goes to stdout whole, never mixed with another
  (bodies past a few MB wait in a temporary file, not in memory); -k
  keeps input order. With -o DIR each body goes to its own file instead,
  named by --output-name (default {#}); a file appears only once complete,
  so an interrupted run leaves no partial files, and an item whose name
  another item of the run has (or, on --resume, had) fails before it is
  sent rather than replace that body; -o /dev/null discards
  the bodies. Any other status fails
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
  --ignore-server-limits ignores those headers (never Retry-After). A
  refusal asking for a pause longer than --max-server-pause fails its item
  and starts no more (exit 1; --resume-failed goes on later). The summary
  shows the pauses and what bound the run: a rule, -j, or the server.

Credentials never appear in output, logs, summaries or errors: URL
passwords (and the user name when it stands alone, as a token does in
https://TOKEN@host), secret query parameters (api_key, token, sig, ...)
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
		Args:    fetchArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.URL = args[0]
			}
			opts.HasData = cmd.Flags().Changed("data")
			if cmd.Flags().Changed("output-name") && opts.OutputDir == "" {
				return flagErrorf("--output-name needs -o DIR/")
			}
			if runF != nil {
				return runF(opts)
			}
			return runFetch(cmd.Context(), opts)
		},
	}
	addFetchFlags(cmd, opts)
	groupFlags(cmd)
	return cmd
}

// fetchArgs accepts at most one argument, the URL template, and says
// what was meant by more: ::: and :::: sources are pace run's, and
// several URLs are items.
func fetchArgs(_ *cobra.Command, args []string) error {
	if len(args) <= 1 {
		return nil
	}
	for i, a := range args {
		if a != ":::" && a != "::::" {
			continue
		}
		template := "'" + args[0] + "'"
		if i == 0 {
			template = "'https://api.example.com/items/{}'"
		}
		rest := args[i+1:]
		if a == "::::" && len(rest) == 1 {
			return fmt.Errorf("pace fetch reads its items from stdin or -a FILE, not after :::: (that is pace run's): pace fetch -a %s %s", rest[0], template)
		}
		if a == "::::" {
			return fmt.Errorf("pace fetch reads its items from stdin or -a FILE, not after :::: (that is pace run's): cat %s | pace fetch %s",
				strings.Join(rest, " "), template)
		}
		return fmt.Errorf("pace fetch reads its items from stdin or -a FILE, not after %s (that is pace run's): printf '%%s\\n' %s | pace fetch %s",
			a, strings.Join(rest, " "), template)
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = strconv.Quote(a)
	}
	return fmt.Errorf("pace fetch takes one URL template, but got %d arguments (%s): give the URLs as items, one per line on stdin or in -a FILE",
		len(args), strings.Join(quoted, " "))
}

// addFetchFlags binds the flags of pace fetch: the common ones, with
// fetch's meaning of --timeout and default for --retries, and its own.
func addFetchFlags(cmd *cobra.Command, opts *FetchOptions) {
	addCommonFlags(cmd, &opts.Common, defaultFetchMargin, defaultFetchMargin)
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
	opts.MaxBody, opts.MaxServerPause = fetch.DefaultMaxBody, fetch.DefaultMaxServerPause
	fl.StringVarP(&opts.Method, "method", "X", "", "request `METHOD` (default GET, or POST with -d)")
	fl.StringArrayVarP(&opts.Headers, "header", "H", nil, "add header `'NAME: VALUE'`; repeatable, placeholders allowed")
	fl.StringVarP(&opts.Data, "data", "d", "", "send `STRING` as the body, or @FILE's content; placeholders allowed")
	fl.BoolVar(&opts.Insecure, "insecure", false, "do not verify servers' TLS certificates")
	fl.VarP(pathValue{&opts.OutputDir, "want a directory, such as out/, or a file name; leave -o out to write bodies to stdout"}, "output", "o", "write each body to its own file in `DIR/`, not to stdout;\na path without a trailing slash that is not a directory is one file, for one item;\na device or FIFO (/dev/null) takes every body")
	fl.Var(pathValue{&opts.OutputDir, "want a directory; leave --output-dir out to write bodies to stdout"}, "output-dir", "the same as -o DIR/")
	fl.MarkHidden("output-dir")
	fl.StringVar(&opts.OutputName, "output-name", "{#}", "file name `TEMPLATE` in -o DIR/")
	fl.BoolVar(&opts.IgnoreServerLimits, "ignore-server-limits", false,
		"ignore RateLimit and X-RateLimit headers, and learn nothing from 429s\n(Retry-After is always honoured)")
	fl.Var(costFromValue{&opts.CostFrom}, "cost-from-response",
		"read each call's true cost from its response: `header:NAME` or json:PATH (such as\njson:usage.total_tokens); the cost the rules counted is corrected at its admission")
	fl.BoolVar(&opts.RulesFromServer, "rules-from-server", false,
		"keep the rules the server publishes (RateLimit-Policy, RateLimit-Limit with w=) as rules of the run, with -r")
	fl.Var(sizeValue{&opts.MaxBody}, "max-body", "fail an item whose body is larger than `SIZE` (such as 64M or 2G)")
	fl.Var(durationValue{&opts.MaxServerPause}, "max-server-pause", "stop the run when a 429's Retry-After or rate-limit headers ask to pause longer than `DURATION` (failing its item), or a rule the server publishes (--rules-from-server) would hold the next call longer")
	fl.StringArrayVar(&opts.RedactParams, "redact-param", nil, "hide the value of query parameter `NAME` wherever a URL is shown (repeatable)")
	fl.Lookup("max-body").DefValue = spec.FormatSize(fetch.DefaultMaxBody)
	fl.Lookup("max-server-pause").DefValue = fetch.DefaultMaxServerPause.String()
	cmd.RegisterFlagCompletionFunc("method", cobra.FixedCompletions(
		[]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.RegisterFlagCompletionFunc("header", cobra.NoFileCompletions)
	cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
}

// runFetch runs pace fetch with checked options.
func runFetch(ctx context.Context, opts *FetchOptions) error {
	o := &opts.Common
	if err := o.check(); err != nil {
		return err
	}
	switch {
	case opts.MaxBody <= 0:
		return flagErrorf("invalid argument for \"--max-body\": want more than 0, such as 64M")
	case opts.CostFrom.Kind != "" && len(o.CostRules) == 0:
		return flagErrorf("--cost-from-response corrects costs, but no --cost-rate limits them: add one, such as --cost-rate 90000/min")
	case opts.RulesFromServer && opts.IgnoreServerLimits:
		return flagErrorf("--rules-from-server and --ignore-server-limits contradict each other: use one")
	case opts.MaxServerPause <= 0:
		return flagErrorf("invalid argument %v for \"--max-server-pause\": want more than 0, such as 5m", opts.MaxServerPause)
	}
	if o.Cost != nil && o.ColSep == "" && !o.colSepSet {
		if err := checkColumns(fmt.Sprintf("--cost %q", o.Cost), o.Cost.MaxColumn(), 1, false); err != nil {
			return err
		}
	}
	ios := opts.IO
	if opts.HasData && !opts.Common.DryRun {
		if name, ok := strings.CutPrefix(opts.Data, "@"); ok && !strings.Contains(name, "{") {
			if fi, err := os.Stat(name); err != nil || fi.IsDir() {
				return reportf(ios, ExitUsage, "data file: %v", cmp.Or(err, fmt.Errorf("%s is a directory: give a file (-d @FILE)", name)))
			}
		}
	}
	outDir, outFile, outStream := opts.outputTarget()
	if name, ok := strings.CutPrefix(opts.Data, "@"); ok && opts.HasData && o.Input == "-" &&
		!(outFile != "" && opts.URL != "" && !strings.Contains(opts.URL, "{")) && items.IsStdin(name, ios.In) {
		return flagErrorf("-d @%s reads stdin, which holds the items: give the items with -a FILE", name)
	}
	var more []pathFlag
	if name, ok := strings.CutPrefix(opts.Data, "@"); ok && opts.HasData && !strings.Contains(name, "{") {
		more = append(more, pathFlag{flag: "-d @FILE", path: name})
	}
	more = append(more, pathFlag{flag: "-o", path: outFile, output: true})
	if err := o.checkPaths(more...); err != nil {
		return err
	}
	if dir, what := outDir, "output directory"; !o.DryRun && (dir != "" || outFile != "") {
		if dir == "" {
			dir, what = filepath.Dir(outFile), "-o "+outFile
		}
		// A body that cannot be kept has spent a call: a directory that
		// takes no file (read-only) is refused before any.
		if err := cmp.Or(os.MkdirAll(dir, 0o777), outfile.CheckDir(dir)); err != nil {
			return reportf(ios, ExitUsage, "%s: %v", what, err)
		}
	}
	// The server's long pauses are told through the session's display,
	// which erases the bar first: it exists once the run starts, and
	// the transport that tells of them is made then (Use).
	var say func(msg string)
	ex, err := fetch.New(fetch.Options{
		Client:             fetch.NewClient(fetch.ClientOptions{Conns: o.Jobs, Insecure: opts.Insecure}),
		URL:                opts.URL,
		Method:             opts.Method,
		Headers:            opts.Headers,
		Data:               opts.Data,
		HasData:            opts.HasData,
		UserAgent:          "pace/" + fullVersion(),
		Timeout:            o.Timeout,
		OutputDir:          outDir,
		OutputName:         opts.OutputName,
		OutputFile:         outFile,
		MaxBody:            opts.MaxBody,
		MaxServerPause:     opts.MaxServerPause,
		IgnoreServerLimits: opts.IgnoreServerLimits,
		SecretParams:       opts.RedactParams,
		CostFrom:           opts.CostFrom,
		Learn:              !opts.IgnoreServerLimits,
		Adopt:              opts.RulesFromServer,
		OnPause:            announcePause(func(msg string) { say(msg) }),
	})
	if err != nil {
		return flagErrorf("%v", err)
	}

	readOpts, err := o.readOptions()
	if err != nil {
		return err
	}
	if opts.URL == "" {
		readOpts.Skip = isCommentOrBlank
	}
	in, err := openUntilInterrupt(opts.Factory, func() (*items.Input, error) { return opts.openInput(ios.In, outFile != "", readOpts) })
	var exitErr *ExitError
	if errors.As(err, &exitErr) {
		return err // interrupted
	}
	if err != nil {
		return reportf(ios, ExitUsage, "%v", err)
	}
	defer in.Close()
	var executor runner.Executor = ex
	if o.Cost != nil {
		executor = costexpr.Executor{Executor: ex, Expr: o.Cost, Body: ex.BodyLen, Rules: o.allRules()}
	}
	if o.DryRun {
		return dryRun(ctx, opts.Factory, o, executor, fetchJobLogCommand, in, readOpts)
	}
	use := func(b throttle.Backend, hint func(string), remaining func() int64) *pacehttp.Transport {
		say = hint // before the transport, which may call OnPause, is made
		return ex.Use(b, hint, remaining)
	}
	s := &session{
		f:           opts.Factory,
		opts:        o,
		executor:    executor,
		useBackend:  use,
		input:       in,
		readOpts:    readOpts,
		print:       printFetchResult(o.Tag, o.Verbose, ex.ShowItem),
		logCommand:  fetchJobLogCommand,
		show:        ex.ShowItem,
		filesPerJob: 4, // a connection, an output file, two spill files
	}
	if outStream != "" {
		s.openOut = func(ctx context.Context) (io.WriteCloser, error) {
			f, err := outfile.Create(ctx, outStream)
			if err != nil {
				return nil, fmt.Errorf("-o %w", err)
			}
			return streamFile{f}, nil
		}
	}
	return s.run(ctx)
}

// longPause is the shortest server pause that pace announces.
const longPause = 3 * time.Second

// announcePause returns the OnPause of pace fetch's and pace proxy's
// transport: it tells say, which writes a line of pace's own through the
// display, when the server asks for a long pause.
func announcePause(say func(msg string)) func(d time.Duration, reason string) {
	return func(d time.Duration, reason string) {
		if d >= longPause {
			say(fmt.Sprintf("the server asked for a pause of %s (%s): admitting nothing until %s",
				roundDuration(d), reason, time.Now().Add(d).Format("15:04:05")))
		}
	}
}

// outputTarget tells -o DIR/ (one file per item in DIR) from -o FILE (one
// file for the one item) and from -o STREAM (a character device or a FIFO,
// such as /dev/null, which takes every body as stdout would): a path that
// ends in a slash or is a directory is a directory; one that leads to a
// device or a FIFO, a stream.
func (opts *FetchOptions) outputTarget() (dir, file, stream string) {
	o := opts.OutputDir
	if o == "" {
		return "", "", ""
	}
	if strings.HasSuffix(o, "/") || strings.HasSuffix(o, string(os.PathSeparator)) {
		return o, "", ""
	}
	if opts.OutputName != "{#}" {
		return o, "", "" // --output-name says it is a directory
	}
	if fi, err := os.Stat(o); err == nil {
		switch m := fi.Mode(); {
		case m.IsDir():
			return o, "", ""
		case m&(os.ModeCharDevice|os.ModeNamedPipe) != 0:
			return "", "", o
		}
	}
	return "", o, ""
}

// streamFile is an -o that takes every body: a device or a FIFO.
type streamFile struct{ f *outfile.File }

func (s streamFile) Write(p []byte) (int, error) { return s.f.Write(p) }
func (s streamFile) Close() error                { return s.f.Commit() }

// openInput opens the items of a fetch. With -o FILE there must be one
// item: a URL given without placeholders is that item (stdin is not
// read); otherwise the input may hold one item only, which is checked
// before anything is sent.
func (opts *FetchOptions) openInput(stdin io.Reader, oneFile bool, ro items.ReadOptions) (*items.Input, error) {
	if oneFile && opts.URL != "" && !strings.Contains(opts.URL, "{") {
		return items.NewInput(strings.NewReader("{}\n"), "the URL"), nil
	}
	in, err := items.Open(opts.Common.Input, stdin)
	if err != nil || !oneFile {
		return in, err
	}
	var first []string
	errMore := errors.New("more than one item")
	err = items.Scan(in.R, ro, func(it runner.Item) error {
		if len(first) == 1 {
			return errMore
		}
		first = append(first, it.Text)
		return nil
	})
	in.Close()
	switch {
	case errors.Is(err, errMore):
		dir := strings.TrimSuffix(opts.OutputDir, filepath.Ext(opts.OutputDir))
		if dir == "" || strings.HasSuffix(dir, "/") {
			dir = opts.OutputDir + ".d"
		}
		return nil, fmt.Errorf("-o %s names one file, but %s holds more than one item: "+
			"give a directory (-o %s/) for one file per item, named by --output-name, or -o /dev/null to discard the bodies",
			opts.OutputDir, in.Name, dir)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", in.Name, err)
	}
	text := strings.Join(first, "")
	if ro.NUL {
		text += "\x00"
	} else {
		text += "\n"
	}
	return items.NewInput(strings.NewReader(text), in.Name), nil
}

// printFetchResult returns the printer of a fetch result: the body on
// stdout (tagged with the item as show returns it, with --tag) and, with
// verbose, the start of a failed response's body on stderr.
func printFetchResult(tag, verbose bool, show func(j *runner.Job) string) func(out, errOut io.Writer, r *runner.Result) error {
	print := printOutput(tag)
	return func(out, errOut io.Writer, r *runner.Result) error {
		c := *r
		c.Job.Item = show(&r.Job)
		if !verbose {
			c.Stderr = nil
		}
		err := print(out, errOut, &c)
		if b := c.Stderr.Bytes(); len(b) > 0 && b[len(b)-1] != '\n' {
			// An error body is shown as whole lines.
			if _, eerr := io.WriteString(errOut, "\n"); err == nil {
				err = eerr
			}
		}
		return err
	}
}

// costFromValue is the pflag.Value of --cost-from-response.
type costFromValue struct{ c *pacehttp.CostSource }

func (v costFromValue) String() string {
	if v.c == nil || v.c.Kind == "" {
		return ""
	}
	return v.c.Kind + ":" + v.c.Name
}

func (v costFromValue) Set(s string) error {
	c, err := pacehttp.ParseCostSource(s)
	if err != nil {
		return errors.New(userMessage(err))
	}
	*v.c = c
	return nil
}

func (costFromValue) Type() string { return "SOURCE" }
