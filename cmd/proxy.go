package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/internal/redact"
	"github.com/pace-cli/pace/runner/proxy"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/pacehttp"
)

// proxyURLEnv is the variable that tells -- CMD where the proxy listens.
const proxyURLEnv = "PACE_PROXY_URL"

// Limits of the proxy's HTTP server against clients that misbehave.
const (
	proxyMaxHeaderBytes    = 64 << 10
	proxyReadHeaderTimeout = 10 * time.Second
	proxyIdleTimeout       = 2 * time.Minute
)

// ProxyOptions are the inputs of pace proxy.
type ProxyOptions struct {
	IO      *IOStreams
	Factory *Factory
	// Upstream is where every request goes (--upstream).
	Upstream string
	upstream *url.URL
	// Rules, CostRules and Cost are as pace exec's, per request.
	Rules     []throttle.Rule
	CostRules []throttle.Rule
	Cost      int
	costSet   bool
	CostFrom  pacehttp.CostSource
	// Jobs caps the requests in flight upstream (-j); 0: no cap.
	Jobs int
	// Listen is the address to listen on; AllowRemote allows one that
	// is not loopback.
	Listen      string
	AllowRemote bool
	// PortFile, if set, receives the proxy's URL once it listens.
	PortFile string
	// MaxWait answers 429 to a request that would wait longer.
	MaxWait time.Duration
	// Timeout bounds the wait for the upstream's response headers.
	Timeout time.Duration
	// Grace is how long requests in flight may finish after an interrupt.
	Grace time.Duration
	// Margin widens every rule's window; fixed when given (marginSet),
	// else adapted from this floor.
	Margin    time.Duration
	marginSet bool
	// IgnoreServerLimits, RulesFromServer and MaxServerPause are as pace
	// fetch's.
	IgnoreServerLimits bool
	RulesFromServer    bool
	MaxServerPause     time.Duration
	// Verbose logs every request (redacted) on stderr.
	Verbose bool
	Shared  RedisOptions
	// Command runs with PACE_PROXY_URL set; the proxy stops when it ends.
	Command []string
}

const proxyLong = `Run a local HTTP reverse proxy in front of one upstream API: every
request a client sends to it is admitted under the rules (waiting, first
come first served, for the rules and for one of -j slots), then sent to
--upstream, and the answer streams back as it comes. Any program that
makes HTTP calls itself (a Python or Node script, terraform, gh, a cloud
SDK) is paced this way, without a process per call.

  pace proxy --upstream https://api.example.com -r 10/s,500/min -j 8
  http://127.0.0.1:41234

The proxy prints its URL on stdout (one line; --port-file F writes it to
F as well) and serves until SIGINT or SIGTERM. With -- CMD ARGS it runs
CMD with $` + proxyURLEnv + ` set to that URL instead (printing nothing on
stdout), stops when CMD exits, and exits with CMD's status. Point the
client's base URL at it: a request for $` + proxyURLEnv + `/v1/items goes
to UPSTREAM/v1/items. This is a reverse proxy, not a forward one: do not
set HTTP_PROXY to it.

Requests:
  Method, path, query, headers and body go upstream as sent, with Host
  the upstream's; hop-by-hop headers are dropped and no X-Forwarded-*
  header is added. Credentials (Authorization, cookies, API keys in
  headers or the query) pass through untouched and never appear in
  pace's output. Each request costs 1, or --cost N under --cost-rate,
  corrected from its response with --cost-from-response.

The server has the last word, as with pace fetch:
  A 429 or 503 with Retry-After, and rate-limit headers that say the
  quota is spent, pause every admission; the proxy learns the server's
  rule from its refusals. The upstream's answer, 429 included, goes to the
  client as it is: the proxy never retries.

Clients come and go:
  A client that disconnects while its request waits spends nothing; one
  that disconnects mid-response frees its slot at once. --max-wait D
  answers 429, with a Retry-After computed from the rules, to a request
  that would wait longer than D, so that clients' own retry logic works;
  without it, requests wait. The proxy answers 502 when the upstream
  cannot be reached, 504 when it does not answer within --timeout, 503
  when the shared quota's store is down or the proxy is stopping.

Listening:
  --listen defaults to 127.0.0.1:0, a free port on loopback. An address
  that is not loopback needs --allow-remote: anyone who can reach it can
  send requests to the upstream and spend the quota.

Interrupts:
  The first SIGINT or SIGTERM stops accepting connections, answers 503 to
  requests still waiting and lets those in flight finish for up to
  --grace; then one summary line on stderr. With -- CMD the signals go to
  CMD instead, and the proxy stops once CMD has exited.

` + redisHelp + `

Exit codes:
  N    with -- CMD: CMD's exit status (128+S if signal S killed it)
  2    usage or rule error, cannot listen, or the quota is kept with other
       rules; nothing ran
  3    the quota's store failed before the proxy started
  126  CMD cannot run; 127 CMD was not found
  130  stopped by SIGINT (143: SIGTERM)`

const proxyExample = `  # pace a Python script's calls: 10/s and 500/min, 8 in flight
  pace proxy --upstream https://api.example.com -r 10/s,500/min -j 8 -- python sync.py
  # (sync.py reads its base URL from $PACE_PROXY_URL)

  # share GitHub's quota with every pace on this host; gh through the proxy
  pace proxy --upstream https://api.github.com -r 5000/h --key gh --port-file port &
  GH_HOST=... curl -H "Authorization: Bearer $TOKEN" "$(cat port)/rate_limit"

  # answer 429 at once rather than hold a request more than 5s
  pace proxy --upstream https://api.example.com -r 2/s --max-wait 5s --listen 127.0.0.1:8080`

// NewCmdProxy returns the pace proxy command. runF, if not nil, replaces
// the real run (tests capture the options with it).
func NewCmdProxy(f *Factory, runF func(*ProxyOptions) error) *cobra.Command {
	opts := &ProxyOptions{IO: f.IOStreams, Factory: f, Margin: defaultFetchMargin, Grace: defaultGrace,
		Listen: "127.0.0.1:0", MaxServerPause: pacehttp.DefaultMaxServerPause}
	cmd := &cobra.Command{
		Use:     "proxy --upstream <url> [flags] [-- <command> [<arg>...]]",
		Short:   "Pace any HTTP client: a local reverse proxy that admits each request under the rules",
		Long:    proxyLong,
		Example: proxyExample,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Command = args
			opts.costSet = cmd.Flags().Changed("cost")
			opts.marginSet = cmd.Flags().Changed("margin")
			if err := opts.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return proxyRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().SetInterspersed(false)
	fl := cmd.Flags()
	fl.StringVar(&opts.Upstream, "upstream", "", "send every request to `URL` (http:// or https://, with an optional path prefix)")
	fl.VarP(rulesValue{rules: &opts.Rules}, "rate", "r",
		"rate rule `N/PERIOD`, e.g. 10/s, 5000/h, 12/3s;\nrepeat or comma-separate to keep several at once")
	fl.Var(rulesValue{rules: &opts.CostRules, cost: true}, "cost-rate",
		"cost rule `N/PERIOD`: the requests' costs (--cost) add up to at most N in any window")
	fl.Var(intValue{&opts.Cost}, "cost", "each request's cost under --cost-rate: a whole number `N` (default 1)")
	fl.Var(costFromValue{&opts.CostFrom}, "cost-from-response",
		"read each request's true cost from its response: `header:NAME` or json:PATH")
	fl.VarP(intValue{&opts.Jobs}, "jobs", "j", "send at most `N` requests upstream at once (default 0: no cap)")
	fl.StringVar(&opts.Listen, "listen", opts.Listen, "listen on `ADDR` (host:port; port 0 picks a free one)")
	fl.BoolVar(&opts.AllowRemote, "allow-remote", false, "allow a --listen address that is not loopback")
	fl.StringVar(&opts.PortFile, "port-file", "", "write the proxy's URL to `FILE` once it listens")
	fl.Var(durationValue{&opts.MaxWait}, "max-wait", "answer 429 with Retry-After to a request that would wait longer than `DURATION` (default: wait)")
	fl.Var(durationValue{&opts.Timeout}, "timeout", "answer 504 when the upstream has not answered within `DURATION` (default 0: no limit)")
	fl.Var(durationValue{&opts.Grace}, "grace", "after the first interrupt, let requests in flight finish for up to `DURATION`")
	fl.Var(durationValue{&opts.Margin}, "margin", "widen every rule's window by `DURATION`, fixed (default: adapted, at least 10ms)")
	fl.BoolVar(&opts.IgnoreServerLimits, "ignore-server-limits", false,
		"ignore RateLimit and X-RateLimit headers, and learn nothing from 429s\n(Retry-After is always honoured)")
	fl.BoolVar(&opts.RulesFromServer, "rules-from-server", false, "keep the rules the server publishes (RateLimit-Policy) as rules, with -r")
	fl.Var(durationValue{&opts.MaxServerPause}, "max-server-pause", "take no pause longer than `DURATION` from a 429's Retry-After")
	fl.BoolVarP(&opts.Verbose, "verbose", "v", false, "log every request on stderr (method, redacted URL, status, wait)")
	fl.Lookup("grace").DefValue = defaultGrace.String()
	fl.Lookup("max-server-pause").DefValue = pacehttp.DefaultMaxServerPause.String()
	addRedisFlags(cmd, &opts.Shared)
	for _, name := range []string{"upstream", "rate", "cost-rate", "cost", "jobs", "listen", "max-wait", "timeout", "grace", "margin"} {
		cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
	return cmd
}

// check validates the options that flag parsing cannot.
func (o *ProxyOptions) check() error {
	if o.Upstream == "" {
		return flagErrorf("pace proxy needs --upstream URL, such as --upstream https://api.example.com")
	}
	u, err := parseUpstream(o.Upstream)
	if err != nil {
		return flagErrorf("invalid argument %q for \"--upstream\": %v", redact.New().RawURL(o.Upstream), err)
	}
	o.upstream = u
	switch {
	case o.Jobs < 0:
		return flagErrorf("invalid argument %d for \"-j\": want at least 1, or 0 for no cap", o.Jobs)
	case o.MaxWait < 0:
		return flagErrorf("invalid argument %v for \"--max-wait\": want more than 0, such as 5s", o.MaxWait)
	case o.Timeout < 0:
		return flagErrorf("invalid argument %v for \"--timeout\": want at least 0", o.Timeout)
	case o.Grace < 0:
		return flagErrorf("invalid argument %v for \"--grace\": want at least 0", o.Grace)
	case o.Margin < 0:
		return flagErrorf("invalid argument %v for \"--margin\": want at least 0", o.Margin)
	case o.MaxServerPause <= 0:
		return flagErrorf("invalid argument %v for \"--max-server-pause\": want more than 0, such as 5m", o.MaxServerPause)
	case o.costSet && o.Cost < 1:
		return flagErrorf("invalid argument %d for \"--cost\": want at least 1", o.Cost)
	case o.costSet && len(o.CostRules) == 0:
		return flagErrorf("--cost gives each request a cost, but no --cost-rate limits costs: add one, such as --cost-rate 90000/min")
	case o.CostFrom.Kind != "" && len(o.CostRules) == 0:
		return flagErrorf("--cost-from-response corrects costs, but no --cost-rate limits them: add one, such as --cost-rate 90000/min")
	case o.RulesFromServer && o.IgnoreServerLimits:
		return flagErrorf("--rules-from-server and --ignore-server-limits contradict each other: use one")
	}
	if o.Cost == 0 {
		o.Cost = 1
	}
	if m := throttle.MaxCost(o.allRules()); m > 0 && o.Cost > m {
		return flagErrorf("invalid argument %d for \"--cost\": no request could ever be admitted under a cost rule of %d", o.Cost, m)
	}
	if err := checkListen(o.Listen, o.AllowRemote); err != nil {
		return err
	}
	return o.Shared.check(len(o.allRules()) > 0)
}

// allRules returns -r's rules, then --cost-rate's.
func (o *ProxyOptions) allRules() []throttle.Rule {
	return append(slices.Clone(o.Rules), o.CostRules...)
}

// parseUpstream checks an --upstream URL: http or https, a host, no
// credentials (clients send their own), no fragment.
func parseUpstream(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, errors.New("want a URL such as https://api.example.com")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("want an http:// or https:// URL, such as https://api.example.com")
	case u.Host == "":
		return nil, errors.New("no host: want a URL such as https://api.example.com")
	case u.User != nil:
		return nil, errors.New("credentials in the URL are not sent by a reverse proxy: leave them out and let the client send its own")
	case u.Fragment != "":
		return nil, errors.New("want no #fragment")
	}
	return u, nil
}

// checkListen refuses a --listen address that is not loopback, unless
// allowed.
func checkListen(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return flagErrorf("invalid argument %q for \"--listen\": want HOST:PORT, such as 127.0.0.1:8080 (port 0 picks a free one)", addr)
	}
	if !allowRemote && !isLoopback(host) {
		return flagErrorf("--listen %s is not a loopback address: anyone who can reach it could spend the quota through the proxy; "+
			"listen on 127.0.0.1, or add --allow-remote if that is what you want", addr)
	}
	return nil
}

// isLoopback reports whether host names only this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// proxyRun runs the proxy until a signal, or until the command ends; it
// returns nil or an *ExitError with the exit code, everything reported.
func proxyRun(ctx context.Context, opts *ProxyOptions) error {
	ios := opts.IO
	errOut := &lockedWriter{w: ios.ErrOut}
	var path string
	if len(opts.Command) > 0 {
		p, code, err := lookCommand(opts.Command[0])
		if err != nil {
			return reportf(ios, code, "%v", err)
		}
		path = p
	}

	// Until the proxy serves, an interrupt stops pace.
	setupCtx, cancel, endWatch := watchInterrupt(ctx, opts.Factory.Signals)
	defer cancel()
	common := &CommonOptions{Rules: opts.Rules, CostRules: opts.CostRules, Margin: opts.Margin, MarginSet: opts.marginSet,
		Verbose: opts.Verbose, Redis: opts.Shared}
	backend, err := opts.Factory.openBackend(setupCtx, common, errOut)
	if sig := endWatch(); sig != nil {
		if backend != nil {
			backend.Close()
		}
		return reportf(ios, signalExitCode(sig), "%s: stopped before the proxy started", signalName(sig))
	}
	if err != nil {
		return reportf(ios, backendExitCode(err, ExitUsage), "%s", userMessage(err))
	}
	defer backend.Close()

	red := redact.New()
	base := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   max(opts.Jobs, 64),
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: opts.Timeout,
		DisableCompression:    true, // the client's Accept-Encoding, and the body, as they are
	}
	defer base.CloseIdleConnections()
	tr := pacehttp.New(backend, pacehttp.Options{
		Base: proxy.Base(base), Cost: fixedCost(opts.Cost), CostFrom: opts.CostFrom,
		Learn: !opts.IgnoreServerLimits, Adopt: opts.RulesFromServer,
		Hint:               func(msg string) { fmt.Fprintf(errOut, "pace: %s\n", msg) },
		IgnoreServerLimits: opts.IgnoreServerLimits, MaxServerPause: opts.MaxServerPause,
		Margin: opts.Margin, FixedMargin: opts.marginSet,
		OnPause: func(d time.Duration, reason string) {
			if d >= longPause {
				fmt.Fprintf(errOut, "pace: the server asked for a pause of %s (%s): admitting nothing until %s\n",
					roundDuration(d), reason, time.Now().Add(d).Format("15:04:05"))
			}
		},
	})
	popts := proxy.Options{Upstream: opts.upstream, Transport: tr, Jobs: opts.Jobs, MaxWait: opts.MaxWait,
		Rules: opts.allRules(), Redactor: red}
	if opts.Verbose {
		popts.Log = func(msg string) { fmt.Fprintf(errOut, "pace: %s\n", msg) }
	}
	px, err := proxy.New(popts)
	if err != nil { // the options were checked: unreachable
		return reportf(ios, ExitUsage, "%v", err)
	}

	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return reportf(ios, ExitUsage, "cannot listen on %s: %v", opts.Listen, unwrapOp(err))
	}
	proxyURL := "http://" + ln.Addr().String()
	if host, _, _ := net.SplitHostPort(opts.Listen); !isLoopback(host) {
		fmt.Fprintf(errOut, "pace: warning: listening on %s, not loopback: anyone who can reach it can send requests to %s and spend the quota\n",
			ln.Addr(), red.URL(opts.upstream))
	}
	srv := &http.Server{
		Handler:           px,
		MaxHeaderBytes:    proxyMaxHeaderBytes,
		ReadHeaderTimeout: proxyReadHeaderTimeout,
		IdleTimeout:       proxyIdleTimeout,
		ErrorLog:          discardLogger(),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if opts.PortFile != "" {
		if err := writeFileAtomic(opts.PortFile, proxyURL+"\n"); err != nil {
			srv.Close()
			return reportf(ios, ExitUsage, "--port-file: %v", err)
		}
	}
	if opts.Verbose {
		fmt.Fprintf(errOut, "pace: proxy %s -> %s\n", proxyURL, red.URL(opts.upstream))
	}

	code := ExitOK
	if len(opts.Command) > 0 {
		env := append(os.Environ(), proxyURLEnv+"="+proxyURL)
		code = runForegroundEnv(opts.Factory, path, opts.Command, env)
		shutdown(srv, px, opts.Grace, nil, errOut)
	} else {
		if _, err := fmt.Fprintln(ios.Out, proxyURL); err != nil {
			srv.Close()
			return reportf(ios, ExitFailed, "stdout: %v", err)
		}
		select {
		case s := <-opts.Factory.Signals:
			code = signalExitCode(s)
			fmt.Fprintf(errOut, "pace: %s: accepting no more requests; waiting up to %v for %d in flight (interrupt again to stop at once)\n",
				signalName(s), opts.Grace, px.Stats().InFlight)
			shutdown(srv, px, opts.Grace, opts.Factory.Signals, errOut)
		case err := <-served:
			px.Stop()
			fmt.Fprintf(errOut, "pace: the proxy stopped serving: %v\n", err)
			code = ExitFailed
		}
	}
	fmt.Fprintf(errOut, "pace: %s\n", proxySummary(px.Stats()))
	if code != ExitOK {
		return &ExitError{Code: code}
	}
	return nil
}

// shutdown stops accepting, answers the requests still waiting, and lets
// those in flight finish for up to grace (or until a second signal).
func shutdown(srv *http.Server, px *proxy.Proxy, grace time.Duration, again <-chan os.Signal, errOut *lockedWriter) {
	px.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	go func() {
		select {
		case s := <-again:
			fmt.Fprintf(errOut, "pace: %s again: closing %d requests in flight\n", signalName(s), px.Stats().InFlight)
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := srv.Shutdown(ctx); err != nil {
		if n := px.Stats().InFlight; n > 0 && errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintf(errOut, "pace: grace period of %v over: closing %d %s in flight\n", grace, n, plural(int(n), "request"))
		}
		srv.Close()
	}
}

// proxySummary is the one line a proxy says when it stops.
func proxySummary(st proxy.Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "proxy: %d %s", st.Requests, plural(int(st.Requests), "request"))
	codes := make([]int, 0, len(st.Status))
	for c := range st.Status {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	if len(codes) > 0 {
		var parts []string
		for _, c := range codes {
			parts = append(parts, fmt.Sprintf("%d×%d", st.Status[c], c))
		}
		fmt.Fprintf(&b, " (upstream: %s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, "; %d refused by upstream", st.Refused)
	fmt.Fprintf(&b, "; %d waited %s in all", st.Waits, roundDuration(st.WaitTime))
	if st.TooLong > 0 {
		fmt.Fprintf(&b, "; %d answered 429 (--max-wait)", st.TooLong)
	}
	if st.Gone > 0 {
		fmt.Fprintf(&b, "; %d gone while waiting", st.Gone)
	}
	if st.Failed > 0 {
		fmt.Fprintf(&b, "; %d failed (502/503/504)", st.Failed)
	}
	return b.String()
}

// fixedCost returns a cost function giving every request cost n.
func fixedCost(n int) func(*http.Request) (int, error) {
	return func(*http.Request) (int, error) { return n, nil }
}

// unwrapOp returns the innermost error of a net.OpError chain, without
// the address repeated.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// writeFileAtomic writes data to name through a temporary file in its
// directory, so that a reader never sees it half written.
func writeFileAtomic(name, data string) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	if _, err := f.WriteString(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), name); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// lockedWriter serialises the lines of several goroutines on one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// discardLogger is a logger that says nothing: the HTTP server's own
// messages about clients (bad TLS, broken connections) are not pace's.
func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }
