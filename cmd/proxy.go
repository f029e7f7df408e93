package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/internal/foreground"
	"github.com/pace-cli/pace/internal/interrupt"
	"github.com/pace-cli/pace/internal/metrics"
	"github.com/pace-cli/pace/internal/outfile"
	"github.com/pace-cli/pace/internal/redact"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/runner/proxy"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/pacehttp"
)

// proxyURLEnv is the variable that tells -- CMD where the proxy listens.
const proxyURLEnv = "PACE_PROXY_URL"

// ProxyOptions are the inputs of pace proxy.
type ProxyOptions struct {
	IO      *IOStreams
	Factory *Factory
	// Common holds what pace proxy shares with run and fetch: -r,
	// --cost-rate, -j (0: no cap), --margin, --grace, -v, --joblog,
	// progress, summary, metrics, --key and --redis.
	Common CommonOptions
	// Upstream is where every request goes (--upstream).
	Upstream string
	upstream *url.URL
	// Cost is each request's cost (--cost); CostFrom corrects it from the
	// response.
	Cost     int
	costSet  bool
	CostFrom pacehttp.CostSource
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
	// ClientTimeout ends a request whose client sends no byte of its
	// body, or takes no byte of its answer, for that long (0: never).
	ClientTimeout time.Duration
	// IgnoreServerLimits, RulesFromServer and MaxServerPause are as pace
	// fetch's.
	IgnoreServerLimits bool
	RulesFromServer    bool
	MaxServerPause     time.Duration
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
  corrected from its response with --cost-from-response. A websocket (or
  any Connection: Upgrade request the upstream answers 101 Switching
  Protocols) is one request, admitted once at the upgrade; its connection
  then carries bytes both ways, unpaced, and holds its -j slot until either
  side closes it.

The server has the last word, as with pace fetch:
  A 429 or 503 with Retry-After, and rate-limit headers that say the
  quota is spent, pause every admission; the proxy learns the server's
  rule from its refusals. The upstream's answer, 429 included, goes to the
  client as it is (but for links to the upstream in its Location,
  Content-Location and Link headers, rewritten to the proxy, so that
  redirects and next pages come through it too, and its cookies' Domain,
  Path and Secure, rewritten for the proxy's plain HTTP address, so that
  they come back): the proxy never retries.

Clients come and go:
  A client that disconnects while its request waits spends nothing; one
  that disconnects mid-response frees its slot at once. A request body of
  up to 64 KiB (with a length, or chunked) is read before the wait; a
  longer body, or one sent after Expect: 100-continue, streams upstream
  once admitted (a longer one not before its first bytes have come);
  while it waits, its body is read into a spool (memory, then an unlinked
  temporary file; up to 256 MiB a request and 1 GiB in all), so that a
  client gone mid-body is seen, and on Linux its client's connection is
  looked at every 20ms. A client that sends no byte of its body, or takes
  no byte of its answer, for --client-timeout (default 1m) is cut off:
  its request is cancelled upstream, its slot freed, 408 for a body that
  stalled (spending nothing if it had not been sent). One that keeps
  sending is never cut off, however slowly; one that keeps reading, not
  unless it reads less than a TCP segment (up to 64 KiB) in that time,
  as the kernel tells of a reader's progress no finer. --max-wait D
  answers 429, with a Retry-After computed from the rules, to a request
  that would wait longer than D, so that clients' own retry logic works;
  without it, requests wait. The proxy answers 502 when the upstream
  cannot be reached, 504 when it does not answer within --timeout (or
  takes no byte of a request's body for that long), 503 when the shared
  quota's store is down or the proxy is stopping.

Listening:
  --listen defaults to 127.0.0.1:0, a free port on loopback. An address
  that is not loopback needs --allow-remote: anyone who can reach it can
  send requests to the upstream and spend the quota. An --upstream that
  is the proxy's own address is refused. --port-file F holds the URL only
  while the proxy listens: F is written whole once it listens (a new file
  renamed over F: a reader never sees part of a URL), and removed as it
  stops, whatever stops it, unless someone else has replaced or rewritten
  F since (another proxy's URL is left alone). A proxy killed outright
  (SIGKILL, a crash) cannot remove F, which names a dead proxy until the
  next proxy replaces it: a script that waits for F to appear removes it
  first (rm -f F). A FIFO as F waits for its reader; a signal stops the
  proxy meanwhile.

What it did:
  As pace run and fetch: progress on stderr (requests done, waiting, the
  rate, the rule that binds; no bar while -- CMD runs, status lines
  instead), the summary when it stops (--summary, --summary-file), and
  Prometheus metrics (--metrics-addr). --joblog FILE appends one row per
  request sent upstream, with "METHOD URL" (credentials redacted) as its
  Command: Exitval 0 when the upstream answered with a status below 400,
  the status otherwise, -1 when no whole answer came (-v says why: the
  upstream down, the client gone or stalled); earlier rows count
  against the rules, and pace audit and pace plot read it. Requests the
  proxy answered itself (--max-wait's 429s, 503s while stopping, 408s
  before sending) and those whose client left while they waited spent
  nothing and have no row; the summary counts them.

Interrupts:
  The first SIGINT or SIGTERM stops accepting connections, answers 503 to
  requests still waiting and lets those in flight finish for up to
  --grace (a second signal closes them at once); then the summary and the
  job log. With -- CMD the signals go to CMD instead, and the proxy stops
  the same way once CMD has exited; a signal then closes what is still in
  flight at once, and if CMD exited 0 pace ends as that signal stopped
  it: it dies of SIGINT (a shell sees 130), exits 143 for SIGTERM.

` + redisHelp + `

Exit codes:
  N    with -- CMD: CMD's exit status (128+S if signal S killed it);
       1 if CMD exited 0 but a request's job log row could not be written
  2    usage or rule error, cannot listen, or the quota is kept with other
       rules; nothing ran
  3    the quota's store failed before the proxy started
  126  CMD cannot run; 127 CMD was not found
  130  stopped by SIGINT, which pace then dies of (a shell sees 130);
       143 SIGTERM, 129 SIGHUP, 131 SIGQUIT`

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
	opts := &ProxyOptions{IO: f.IOStreams, Factory: f, Listen: "127.0.0.1:0", MaxServerPause: pacehttp.DefaultMaxServerPause,
		ClientTimeout: proxy.DefaultClientTimeout}
	o := &opts.Common
	o.Margin, o.marginLeast, o.Grace = defaultFetchMargin, defaultFetchMargin, defaultGrace
	cmd := &cobra.Command{
		Use:     "proxy --upstream <url> [flags] [-- <command> [<arg>...]]",
		Short:   "Pace any HTTP client: a local reverse proxy that admits each request under the rules",
		Long:    proxyLong,
		Example: proxyExample,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Command = args
			opts.costSet = cmd.Flags().Changed("cost")
			o.MarginSet = cmd.Flags().Changed("margin")
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
	fl.VarP(rulesValue{rules: &o.Rules}, "rate", "r",
		"rate rule `N/PERIOD`, e.g. 10/s, 5000/h, 12/3s;\nrepeat or comma-separate to keep several at once")
	fl.Var(rulesValue{rules: &o.CostRules, cost: true}, "cost-rate",
		"cost rule `N/PERIOD`: the requests' costs (--cost) add up to at most N in any window")
	fl.Var(intValue{&opts.Cost}, "cost", "each request's cost under --cost-rate: a whole number `N` (default 1)")
	fl.Var(costFromValue{&opts.CostFrom}, "cost-from-response",
		"read each request's true cost from its response: `header:NAME` or json:PATH")
	fl.VarP(intValue{&o.Jobs}, "jobs", "j", "send at most `N` requests upstream at once (default 0: no cap)")
	fl.StringVar(&opts.Listen, "listen", opts.Listen, "listen on `ADDR` (host:port; port 0 picks a free one)")
	fl.BoolVar(&opts.AllowRemote, "allow-remote", false, "allow a --listen address that is not loopback")
	fl.Var(pathValue{&opts.PortFile, "want a file name; leave --port-file out for none"}, "port-file", "write the proxy's URL to `FILE` once it listens, and remove it when the proxy stops")
	fl.Var(durationValue{&opts.MaxWait}, "max-wait", "answer 429 with Retry-After to a request that would wait longer than `DURATION` (default: wait)")
	fl.Var(durationValue{&opts.Timeout}, "timeout", "answer 504 when the upstream has not answered within `DURATION`,\nor has taken no byte of a request's body for that long (default 0: no limit)")
	fl.Var(durationValue{&opts.ClientTimeout}, "client-timeout",
		"end a request whose client sends no byte of its body, or takes no byte of its answer,\nfor `DURATION`, and free its slot (default 1m; 0: never)")
	fl.Var(durationValue{&o.Grace}, "grace", "after the first interrupt, let requests in flight finish for up to `DURATION`")
	fl.Var(durationValue{&o.Margin}, "margin", "widen every rule's window by `DURATION`, fixed (default: adapted, at least 10ms)")
	fl.Lookup("margin").DefValue = "" // adaptive: the usage says how
	fl.BoolVar(&opts.IgnoreServerLimits, "ignore-server-limits", false,
		"ignore RateLimit and X-RateLimit headers, and learn nothing from 429s\n(Retry-After is always honoured)")
	fl.BoolVar(&opts.RulesFromServer, "rules-from-server", false, "keep the rules the server publishes (RateLimit-Policy) as rules, with -r")
	fl.Var(durationValue{&opts.MaxServerPause}, "max-server-pause", "take no pause longer than `DURATION` from a 429's Retry-After, and answer 429 when a rule the server publishes (--rules-from-server) would hold a request longer")
	fl.BoolVarP(&o.Verbose, "verbose", "v", false, "log every request on stderr (method, redacted URL, status, wait)")
	fl.Var(pathValue{&o.JobLog, "want a file name; leave --joblog out for no job log"}, "joblog", "append a row per request sent upstream to `FILE` (GNU parallel's format);\nearlier rows count against the rules")
	addReportFlags(cmd, o)
	fl.Lookup("grace").DefValue = defaultGrace.String()
	fl.Lookup("max-server-pause").DefValue = pacehttp.DefaultMaxServerPause.String()
	fl.Lookup("client-timeout").DefValue = "" // the usage says it
	addRedisFlags(cmd, &o.Redis)
	for _, name := range []string{"upstream", "rate", "cost-rate", "cost", "jobs", "listen", "max-wait", "timeout", "client-timeout", "grace", "margin"} {
		cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
	return cmd
}

// check validates the options that flag parsing cannot.
func (o *ProxyOptions) check() error {
	c := &o.Common
	if o.Upstream == "" {
		return flagErrorf("pace proxy needs --upstream URL, such as --upstream https://api.example.com")
	}
	u, err := proxy.ParseUpstream(o.Upstream)
	if err != nil {
		return flagErrorf("invalid argument %q for \"--upstream\": %v", redact.New().RawURL(o.Upstream), err)
	}
	o.upstream = u
	switch {
	case c.Jobs < 0:
		return flagErrorf("invalid argument %d for \"-j\": want at least 1, or 0 for no cap", c.Jobs)
	case o.MaxWait < 0:
		return flagErrorf("invalid argument %v for \"--max-wait\": want more than 0, such as 5s", o.MaxWait)
	case o.Timeout < 0:
		return flagErrorf("invalid argument %v for \"--timeout\": want at least 0", o.Timeout)
	case o.ClientTimeout < 0:
		return flagErrorf("invalid argument %v for \"--client-timeout\": want at least 0 (0: never)", o.ClientTimeout)
	case c.Grace < 0:
		return flagErrorf("invalid argument %v for \"--grace\": want at least 0", c.Grace)
	case c.Margin < 0:
		return flagErrorf("invalid argument %v for \"--margin\": want at least 0", c.Margin)
	case o.MaxServerPause <= 0:
		return flagErrorf("invalid argument %v for \"--max-server-pause\": want more than 0, such as 5m", o.MaxServerPause)
	case o.costSet && o.Cost < 1:
		return flagErrorf("invalid argument %d for \"--cost\": want at least 1", o.Cost)
	case o.costSet && len(c.CostRules) == 0:
		return flagErrorf("--cost gives each request a cost, but no --cost-rate limits costs: add one, such as --cost-rate 90000/min")
	case o.CostFrom.Kind != "" && len(c.CostRules) == 0:
		return flagErrorf("--cost-from-response corrects costs, but no --cost-rate limits them: add one, such as --cost-rate 90000/min")
	case o.RulesFromServer && o.IgnoreServerLimits:
		return flagErrorf("--rules-from-server and --ignore-server-limits contradict each other: use one")
	}
	if o.Cost == 0 {
		o.Cost = 1
	}
	if m := throttle.MaxCost(c.allRules()); m > 0 && o.Cost > m {
		return flagErrorf("invalid argument %d for \"--cost\": no request could ever be admitted under a cost rule of %d", o.Cost, m)
	}
	if err := checkListen(o.Listen, o.AllowRemote); err != nil {
		return err
	}
	if err := c.checkReport(); err != nil {
		return err
	}
	if err := c.checkPaths(pathFlag{flag: "--port-file", path: o.PortFile, output: true}); err != nil {
		return err
	}
	return c.Redis.check(len(c.allRules()) > 0)
}

// checkListen refuses a --listen address that is not loopback, unless
// allowed.
func checkListen(addr string, allowRemote bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return flagErrorf("invalid argument %q for \"--listen\": want HOST:PORT, such as 127.0.0.1:8080 (port 0 picks a free one)", addr)
	}
	if !allowRemote && !proxy.IsLoopback(host) {
		return flagErrorf("--listen %s is not a loopback address: anyone who can reach it could spend the quota through the proxy; "+
			"listen on 127.0.0.1, or add --allow-remote if that is what you want", addr)
	}
	return nil
}

// proxyRun runs the proxy until a signal, or until the command ends; it
// returns nil or an *ExitError with the exit code, everything reported.
// It is a session without a pool: the proxy's requests are its jobs, told
// to the recorder as they start and end.
func proxyRun(ctx context.Context, opts *ProxyOptions) error {
	ios, o := opts.IO, &opts.Common
	var path string
	if len(opts.Command) > 0 {
		p, code, err := foreground.Look(opts.Command[0])
		if err != nil {
			return reportf(ios, code, "%v", shownCommandError(opts.Command, err))
		}
		path = p
		if o.Progress == progressAuto && !o.Quiet {
			o.Progress = progressLines // CMD writes to the terminal too: no bar
		}
	}
	s := &session{f: opts.Factory, opts: o, logCommand: fetchJobLogCommand, proxy: true,
		show:  func(j *runner.Job) string { return j.Item }, // redacted already
		print: func(io.Writer, io.Writer, *runner.Result) error { return nil }}
	disp := s.newDisplay()
	errOut := displayWriter{disp, ios.ErrOut}
	setupCtx, cancelSetup := context.WithCancel(ctx)
	defer cancelSetup()
	// SIGHUP and SIGQUIT stop the proxy; with CMD only until CMD starts,
	// and then pace exec's forwarding sends them to CMD instead.
	uncatch := opts.Factory.catchStopSignals()
	sigs := &interrupt.Handler{Signals: opts.Factory.Signals, Grace: o.Grace, Out: errOut,
		Noun: "request", Stopping: "accepting no more requests"}
	sigs.Watch(cancelSetup)
	watching := true
	defer func() {
		if watching {
			sigs.Close()
		}
	}()
	backend, jl, closeRun, err := s.open(setupCtx, errOut, sigs)
	if err != nil {
		return err
	}
	defer closeRun()

	red := redact.New()
	base := proxy.NewUpstreamTransport(o.Jobs, opts.Timeout)
	defer base.CloseIdleConnections()
	tr := pacehttp.New(backend, pacehttp.Options{
		Base: proxy.Base(base), Cost: fixedCost(opts.Cost), CostFrom: opts.CostFrom,
		Learn: !opts.IgnoreServerLimits, Adopt: opts.RulesFromServer,
		Hint:               func(msg string) { fmt.Fprintf(errOut, "pace: %s\n", msg) },
		IgnoreServerLimits: opts.IgnoreServerLimits, MaxServerPause: opts.MaxServerPause, CutServerPauses: true,
		Margin: o.Margin, FixedMargin: o.MarginSet, OnPause: announcePause(func(msg string) { fmt.Fprintf(errOut, "pace: %s\n", msg) }),
	})
	var stop, kill func()
	rec := newRecorder(s, tr.Backend(), jl, disp, errOut, func() { stop() })
	rec.kill = func() { kill() }
	px, err := proxy.New(proxy.Options{Upstream: opts.upstream, Transport: tr, Jobs: o.Jobs, MaxWait: opts.MaxWait,
		ClientTimeout: opts.ClientTimeout, Timeout: opts.Timeout, Rules: o.allRules(), Redactor: red, OnEvent: rec.onEvent})
	if err != nil { // the options were checked: unreachable
		jl.Close()
		return reportf(ios, ExitUsage, "%v", err)
	}
	s.metrics.Set(func() metrics.Snapshot { return metrics.Of(rec.tally.Snapshot(), tr.Stats()) })

	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		jl.Close()
		return reportf(ios, ExitUsage, "cannot listen on %s: %v", opts.Listen, unwrapOp(err))
	}
	if proxy.LoopsBack(opts.upstream, ln.Addr()) {
		ln.Close()
		jl.Close()
		return reportf(ios, ExitUsage, "--upstream %s is this proxy itself (--listen %s): each request would come back to it, "+
			"admitted again, without end; give the API's URL", red.URL(opts.upstream), ln.Addr())
	}
	proxyURL := "http://" + ln.Addr().String()
	if host, _, _ := net.SplitHostPort(opts.Listen); !proxy.IsLoopback(host) {
		fmt.Fprintf(errOut, "pace: warning: listening on %s, not loopback: anyone who can reach it can send requests to %s and spend the quota\n",
			ln.Addr(), red.URL(opts.upstream))
	}
	srv := proxy.NewServer(px)
	// stop: accept nothing more, answer the waiting requests 503, let
	// those in flight finish (Shutdown), upgraded connections (websockets,
	// which Shutdown leaves alone) included; kill: close them (Close).
	// --port-file's URL is taken away as the proxy stops accepting, and
	// in any case as it returns.
	var portFile atomic.Pointer[outfile.Owned]
	removePortFile := func() {
		if _, err := portFile.Load().Remove(); err != nil {
			fmt.Fprintf(errOut, "pace: --port-file %v\n", err)
		}
	}
	stopped := make(chan struct{})
	var stopOnce sync.Once
	stop = func() {
		stopOnce.Do(func() {
			removePortFile()
			px.Stop()
			go func() { srv.Shutdown(context.Background()); px.Wait(context.Background()); close(stopped) }()
		})
	}
	kill = func() { srv.Close(); px.CloseUpgraded() }
	served := make(chan error, 1)
	start := time.Now()
	go func() { served <- srv.Serve(ln) }()
	if opts.PortFile != "" {
		// A FIFO waits for its reader, and a signal ends the wait: the
		// proxy then stops as it would once serving (below).
		pf, err := outfile.WriteOwned(setupCtx, opts.PortFile, []byte(proxyURL+"\n"))
		if err != nil && sigs.Signal() == nil {
			srv.Close()
			jl.Close()
			return reportf(ios, ExitUsage, "--port-file %v", err)
		}
		portFile.Store(pf)
		defer removePortFile()
	}
	if o.Verbose {
		fmt.Fprintf(errOut, "pace: proxy %s -> %s\n", proxyURL, red.URL(opts.upstream))
	}

	runDone := make(chan struct{})
	var wg sync.WaitGroup
	var learned func() []throttle.Rule
	if !opts.IgnoreServerLimits {
		learned = func() []throttle.Rule { rules, _ := tr.Learned(); return rules }
	}
	disp.waiting = func() int64 { return px.Stats().Waiting }
	wg.Go(func() { disp.follow(runDone, tr.Backend(), rec.tally, newTotal(), o.allRules(), o.Jobs, learned) })

	facts := &runFacts{opts: o, jobs: o.Jobs, total: -1, read: -1}
	if len(opts.Command) > 0 {
		sigs.Close() // the signals go to CMD
		uncatch()
		watching = false
		// A signal during the setup (it cancelled setupCtx) stops the
		// proxy before CMD runs.
		code := ExitOK
		if sigs.Signal() == nil {
			var killedBy os.Signal
			code, killedBy = runForeground(opts.Factory, path, opts.Command, append(os.Environ(), proxyURLEnv+"="+proxyURL), nil, false)
			facts.command = &code
			facts.commandSignal = killedBy
		}
		stop()
		grace := time.NewTimer(o.Grace)
		// CMD has ended: a signal now is for pace, and closes what is
		// still in flight at once, as a second signal does without CMD.
		select {
		case <-stopped:
		case <-grace.C:
			if n := px.Stats().InFlight; n > 0 {
				fmt.Fprintf(errOut, "pace: grace period of %v over: closing %d %s in flight\n", o.Grace, n, plural(int(n), "request"))
			}
			kill()
			<-stopped
		case sig := <-opts.Factory.Signals:
			if n := px.Stats().InFlight; n > 0 {
				fmt.Fprintf(errOut, "pace: %s: closing %d %s in flight\n", interrupt.Name(sig), n, plural(int(n), "request"))
			}
			kill()
			<-stopped
			// Stopped before it was done: never 0, whatever CMD said.
			facts.signal = interrupt.Name(sig)
			if code == ExitOK {
				code = signalExitCode(sig)
				facts.commandSignal = sig
			}
		}
		grace.Stop()
	} else {
		sigs.Arm(func() int { return int(px.Stats().InFlight) }, stop, func(error) { kill() })
		if setupCtx.Err() != nil {
			// A signal came during the setup (while --port-file
			// waited for its FIFO's reader): it was the first.
			stop()
		} else if _, err := fmt.Fprintln(ios.Out, proxyURL); err != nil {
			fmt.Fprintf(errOut, "pace: stdout: %v\n", err)
			code := ExitFailed
			facts.command = &code
			stop()
		}
		select {
		case <-stopped:
		case err := <-served:
			if !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintf(errOut, "pace: the proxy stopped serving: %v\n", err)
				code := ExitFailed
				facts.command = &code
				stop()
				kill()
			}
			stop() // closed (kill) without a stop, stopped would never come
			<-stopped
		}
	}
	// Once the server is closed, the requests it had taken end at once.
	waitCtx, cancelWait := context.WithTimeout(context.Background(), 5*time.Second)
	px.Wait(waitCtx)
	cancelWait()
	facts.elapsed = time.Since(start)
	close(runDone)
	wg.Wait()
	disp.close()

	facts.tally = rec.tally.Snapshot()
	facts.stats = tr.Stats()
	if sig := sigs.Signal(); sig != nil {
		facts.signal = interrupt.Name(sig)
	}
	facts.unlogged, facts.jobLogErr, facts.outputErr, facts.serverStop = rec.failures()
	if _, l := tr.Learned(); l.Refusals > 0 || len(l.Adopted) > 0 {
		facts.learned = &l
	}
	st := px.Stats()
	facts.proxy = &ProxySummary{Requests: st.Requests, MaxWait: st.TooLong, Gone: st.Gone, Refused: st.Unsent, Connect: st.Connect,
		Stalled: st.Stalled, DotPath: st.DotPath, Asterisk: st.Asterisk, BadBody: st.BadBody}
	rec.reportUnlogged(ios.ErrOut)
	if err := jl.Close(); err != nil && facts.jobLogErr == nil {
		facts.jobLogErr = err
		ios.sayf("%v", err)
	}
	return s.finish(ctx, facts, disp.mode, sigs)
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
