package cmd

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/internal/interrupt"
	"github.com/pace-cli/pace/internal/limiter"
	"github.com/pace-cli/pace/internal/quota"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/localstore"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// QuotaOptions are the inputs of pace quota show and pace quota reset.
type QuotaOptions struct {
	IO *IOStreams
	// Action is "show" or "reset".
	Action string
	// Key names the quota; empty means every quota of the local store
	// (show), or redisrate.DefaultKey with Redis.
	Key string
	// State is the local store's directory (--state); empty means
	// localstore.DefaultDir().
	State string
	// RedisURL is --redis, or $PACE_REDIS_URL when the flag is not given;
	// empty means the local store.
	RedisURL string
	// JSON writes what was found, or done, as JSON on stdout.
	JSON bool
	// Yes resets without asking.
	Yes bool
	// Signals delivers SIGINT and SIGTERM; nil means none ever come.
	Signals <-chan os.Signal

	urlSet, stateSet bool
	timeout          time.Duration // bounds each look at Redis; 0 means quotaTimeout (tests shorten it)
}

// quotaTimeout bounds each look at Redis.
const quotaTimeout = 10 * time.Second

// redisTimeout returns how long a look at Redis may take.
func (o *QuotaOptions) redisTimeout() time.Duration { return cmp.Or(o.timeout, quotaTimeout) }

const quotaLong = `Look at the quotas that pace processes share, or forget one.

A quota is what every pace run, pace fetch and pace exec naming the same
--key keeps together: its rules, the calls in their windows and the
slots of --global-jobs. Without --redis it is the local store's, a file
per quota in --state DIR (default $PACE_STATE_DIR, else
$XDG_STATE_HOME/pace, else ~/.local/state/pace, ~/Library/Application
Support/pace on macOS, %LocalAppData%\pace on Windows); with --redis URL
(or $PACE_REDIS_URL) it is kept in Redis.

"pace quota show" gives, for each rule, the calls (or cost) in its
window now, as used/N and a share; when the next call could go; and the
slots held: by which process (pid), since when, and whether it is alive
(a slot whose holder died is free at once). With Redis, slots are leases
that a dead holder keeps until they expire. Without --key it shows
every quota of the local store.

"pace quota reset" forgets everything a quota holds, so that the next
process starts afresh, with any rules: after a change of rules, or a
test. The calls it forgets still count at the server, so runs right
after a reset may be refused. It asks first on a terminal; elsewhere it
needs --yes. It refuses while a process uses the quota (with Redis: while
one holds a slot; a process sharing only rates cannot be seen).

With --json, show writes the quota as one object (without --key, the
local store's quotas as an array): key, store ("local" or "redis"),
path or url, spec, idle, now, next, next_in_seconds, rules (rule, n,
window_seconds, cost, counter, used, usage), global_jobs and slots (the
local store's: slot, pid, started, since, alive; Redis's leases: lease,
holder, expires, alive). A quota the store keeps nothing of is no quota
for either store: one line on stderr, nothing on stdout, exit 1. Redis
forgets a quota once every call has left its longest window; the local
store keeps its file and shows it idle.

Exit codes:
  0    done
  1    no such quota, the quota is in use, or reset declined
  2    bad flags, or reset without --yes and no terminal to ask
  3    the store cannot be read (damaged or newer file, Redis down)
  130  reset's question stopped by SIGINT, which pace dies of (a shell
       sees 130): the quota left as it was (143: SIGTERM)`

const quotaExample = `  # every quota of this host, and how full their rules are
  pace quota show

  # one quota, as JSON
  pace quota show --key gh --json

  # a quota kept in Redis
  pace quota show --redis redis://cache:6379 --key api

  # forget the quota gh (after a change of its rules)
  pace quota reset --key gh --yes`

// NewCmdQuota returns the pace quota command and its subcommands show and
// reset. runF, if not nil, replaces the real run (tests capture the
// options with it).
func NewCmdQuota(f *Factory, runF func(*QuotaOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "quota {show | reset} [flags]",
		Short:   "Show or reset the quotas that pace processes share",
		Long:    quotaLong,
		Example: quotaExample,
		Args:    cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return flagErrorf("unknown command %q for \"pace quota\": want show or reset", args[0])
			}
			return c.Help()
		},
	}
	sub := func(action, use, short string) *cobra.Command {
		opts := &QuotaOptions{IO: f.IOStreams, Action: action, Signals: f.Signals}
		c := &cobra.Command{
			Use:     use,
			Short:   short,
			Long:    quotaLong,
			Example: quotaExample,
			Args:    cobra.NoArgs,
			RunE: func(c *cobra.Command, _ []string) error {
				if err := opts.check(); err != nil {
					return err
				}
				if runF != nil {
					return runF(opts)
				}
				return quotaRun(c.Context(), opts)
			},
		}
		fl := c.Flags()
		fl.StringVar(&opts.Key, "key", "", "the quota's `NAME`")
		fl.Var(setStringValue{&opts.State, &opts.stateSet}, "state", "the local store's `DIR` (default $PACE_STATE_DIR, else $XDG_STATE_HOME/pace, else a per-user directory)")
		fl.Var(redisURLValue{&opts.RedisURL, &opts.urlSet}, "redis", "the quota is kept in the Redis at `URL` (default $"+redisURLEnv+"; --redis= ignores it)")
		fl.BoolVar(&opts.JSON, "json", false, "write the result as JSON on stdout")
		c.MarkFlagDirname("state")
		c.RegisterFlagCompletionFunc("key", cobra.NoFileCompletions)
		c.RegisterFlagCompletionFunc("redis", cobra.NoFileCompletions)
		if action == "reset" {
			fl.BoolVarP(&opts.Yes, "yes", "y", false, "reset without asking")
		}
		return c
	}
	cmd.AddCommand(
		sub("show", "show [--key <name>] [--state <dir> | --redis <url>] [--json]", "Show a quota's usage, next call and slots"),
		sub("reset", "reset --key <name> [--state <dir> | --redis <url>] [--yes] [--json]", "Forget everything a quota holds"),
	)
	return cmd
}

// check validates the options and takes the URL from $PACE_REDIS_URL when
// --redis was not given.
func (o *QuotaOptions) check() error {
	if !o.urlSet {
		o.RedisURL = os.Getenv(redisURLEnv)
	}
	from := `"--redis"`
	if !o.urlSet {
		from = "$" + redisURLEnv
	}
	switch {
	case o.Action == "reset" && o.Key == "":
		return flagErrorf("pace quota reset needs --key NAME, the quota to forget; pace quota show lists them")
	case o.stateSet && o.State == "":
		return flagErrorf("invalid argument \"\" for \"--state\": want a directory; leave --state out for the default")
	case o.stateSet && o.RedisURL != "":
		return flagErrorf("--state is the local store's directory, but %s keeps quotas in Redis; leave one out (--redis= ignores $%s)", from, redisURLEnv)
	case o.RedisURL != "" && strings.ContainsAny(o.Key, "{}"):
		// Only what no quota can be named: a longer name, or one with
		// control characters, may be an older pace's, still to be shown
		// or reset.
		return flagErrorf("invalid argument %q for \"--key\": want a name without '{' or '}'", o.Key)
	}
	if o.RedisURL != "" {
		if _, err := redisrate.ParseURL(o.RedisURL); err != nil {
			return flagErrorf("invalid %s: %v", from, err)
		}
	}
	return nil
}

// quotaRun shows or resets a quota with checked options; it returns nil
// or an *ExitError, everything reported by then.
func quotaRun(ctx context.Context, opts *QuotaOptions) error {
	if opts.RedisURL != "" {
		redis.SetLogger(limiter.QuietRedisLogger{}) // pace reports Redis's trouble itself
		if opts.Action == "reset" {
			return quotaResetRedis(ctx, opts)
		}
		return quotaShowRedis(ctx, opts)
	}
	dir := opts.State
	if dir == "" {
		var err error
		if dir, err = localstore.DefaultDir(); err != nil {
			return reportf(opts.IO, ExitUsage, "%s", userMessage(err))
		}
	}
	if opts.Action == "reset" {
		return quotaResetLocal(opts, dir)
	}
	return quotaShowLocal(opts, dir)
}

// quotaExitCode is the exit status for an error reading or resetting a
// quota.
func quotaExitCode(err error) int {
	switch {
	case errors.Is(err, throttle.ErrBackend):
		return ExitBackend
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, localstore.ErrInUse), errors.Is(err, redisrate.ErrInUse):
		return ExitFailed
	}
	return ExitUsage
}

// quotaShowLocal shows the quota opts.Key of the local store in dir, or
// every quota there.
func quotaShowLocal(opts *QuotaOptions, dir string) error {
	ios := opts.IO
	keys := []string{opts.Key}
	if opts.Key == "" {
		var err error
		if keys, err = localstore.Keys(dir); err != nil {
			return reportf(ios, ExitFailed, "%s", userMessage(err))
		}
		if len(keys) == 0 && !opts.JSON {
			fmt.Fprintf(ios.ErrOut, "pace: no quotas in %s\n", dir)
			return nil
		}
	}
	views := []quota.View{}
	code := ExitOK
	for _, k := range keys {
		q, err := localstore.Inspect(dir, k)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(ios.ErrOut, "pace: no quota %q in %s\n", k, dir)
			code = max(code, ExitFailed)
			continue
		}
		if err != nil {
			ios.sayf("%s", userMessage(err))
			code = max(code, quotaExitCode(err))
			continue
		}
		views = append(views, quota.FromLocal(q))
	}
	if err := quota.Write(ios.Out, views, opts.JSON, opts.Key == ""); err != nil {
		return reportf(ios, ExitFailed, "write: %v", err)
	}
	if code != ExitOK {
		return &ExitError{Code: code}
	}
	return nil
}

// redisClient makes a client for opts.RedisURL, and the URL redacted.
func redisClient(opts *QuotaOptions) (redis.UniversalClient, string, error) {
	ro, err := redisrate.ParseURL(opts.RedisURL)
	if err != nil {
		return nil, "", err
	}
	return redisrate.NewClient(ro), redisrate.RedactURL(opts.RedisURL), nil
}

// redisKey returns the quota's name in Redis: --key, or the default.
func (o *QuotaOptions) redisKey() string {
	if o.Key == "" {
		return redisrate.DefaultKey
	}
	return o.Key
}

// quotaShowRedis shows the quota opts.Key (or the default) of Redis.
func quotaShowRedis(ctx context.Context, opts *QuotaOptions) error {
	ios := opts.IO
	c, url, err := redisClient(opts)
	if err != nil {
		return reportf(ios, ExitUsage, "%s", userMessage(err))
	}
	defer c.Close()
	// An interrupt stops pace even while Redis does not answer.
	ctx, stop, endWatch := interrupt.Context(ctx, opts.Signals)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, opts.redisTimeout())
	defer cancel()
	q, err := redisrate.Inspect(ctx, c, opts.redisKey())
	if sig := endWatch(); sig != nil {
		return stoppedf(ios, sig, "%s: stopped before redis %s answered", interrupt.Name(sig), url)
	}
	if err != nil {
		return quotaRedisError(ctx, opts, url, opts.redisKey(), err)
	}
	if q.Spec == "" && len(q.Leases) == 0 {
		// Redis keeps nothing of it: as the local store without a file.
		return reportf(ios, ExitFailed, "no quota %q in redis %s", opts.redisKey(), url)
	}
	if err := quota.Write(ios.Out, []quota.View{quota.FromRedis(q, url)}, opts.JSON, false); err != nil {
		return reportf(ios, ExitFailed, "write: %v", err)
	}
	return nil
}

// confirmReset asks on the terminal whether to reset the quota what
// names, unless --yes; off a terminal without --yes it refuses.
func confirmReset(opts *QuotaOptions, what string) error {
	ios := opts.IO
	if opts.Yes {
		return nil
	}
	if !ios.IsStdinTTY() {
		return reportf(ios, ExitUsage, "pace quota reset forgets every call %s has recorded, so that runs after it may break its rules; "+
			"there is no terminal to ask: pass --yes to reset it", what)
	}
	fmt.Fprintf(ios.ErrOut, "Forget every call %s has recorded, and its rules? Runs after it may be refused by the server. [y/N] ", what)
	line, sig, _ := interrupt.Until(opts.Signals, func() string {
		line, _ := bufio.NewReader(ios.In).ReadString('\n')
		return line
	}, nil)
	if sig != nil {
		fmt.Fprintln(ios.ErrOut)
		return stoppedf(ios, sig, "%s: %s left as it was", interrupt.Name(sig), what)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return reportf(ios, ExitFailed, "%s left as it was", what)
}

// resetDone reports a reset.
func resetDone(opts *QuotaOptions, what string, v quota.View) error {
	if opts.JSON {
		if err := quota.WriteReset(opts.IO.Out, v); err != nil {
			return reportf(opts.IO, ExitFailed, "write: %v", err)
		}
		return nil
	}
	fmt.Fprintf(opts.IO.ErrOut, "pace: %s reset: the next process starts afresh, with any rules\n", what)
	return nil
}

// quotaResetLocal resets the quota opts.Key of the local store in dir.
func quotaResetLocal(opts *QuotaOptions, dir string) error {
	ios := opts.IO
	what := fmt.Sprintf("quota %q in %s", opts.Key, dir)
	// The files of a quota NAME are NAME.db and NAME.slots/ (see package
	// localstore). Reset would say it has none too, but only once asked.
	db := filepath.Join(dir, opts.Key+".db")
	_, dbErr := os.Lstat(db)
	_, slotsErr := os.Lstat(filepath.Join(dir, opts.Key+".slots"))
	if errors.Is(dbErr, fs.ErrNotExist) && errors.Is(slotsErr, fs.ErrNotExist) {
		return reportf(ios, ExitFailed, "no %s", what)
	}
	if err := confirmReset(opts, what); err != nil {
		return err
	}
	if err := localstore.Reset(dir, opts.Key); err != nil {
		return reportf(ios, quotaExitCode(err), "%s", userMessage(err))
	}
	return resetDone(opts, what, quota.View{Key: opts.Key, Store: "local", Path: db})
}

// quotaResetRedis resets the quota opts.Key (or the default) of Redis.
func quotaResetRedis(ctx context.Context, opts *QuotaOptions) error {
	ios := opts.IO
	c, url, err := redisClient(opts)
	if err != nil {
		return reportf(ios, ExitUsage, "%s", userMessage(err))
	}
	defer c.Close()
	key := opts.redisKey()
	what := fmt.Sprintf("quota %q in redis %s", key, url)
	if err := confirmReset(opts, what); err != nil {
		return err
	}
	// An interrupt stops pace even while Redis does not answer; the
	// reset may then still happen, once Redis runs it.
	ctx, stop, endWatch := interrupt.Context(ctx, opts.Signals)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, opts.redisTimeout())
	defer cancel()
	err = redisrate.Reset(ctx, c, key)
	if sig := endWatch(); sig != nil && err != nil {
		return stoppedf(ios, sig, "%s: stopped before Redis answered: %s may still be reset once it does (pace quota show tells)",
			interrupt.Name(sig), what)
	}
	if errors.Is(err, fs.ErrNotExist) {
		// As show says it, and the local store.
		return reportf(ios, ExitFailed, "no quota %q in redis %s", key, url)
	}
	if err != nil {
		return quotaRedisError(ctx, opts, url, key, err)
	}
	return resetDone(opts, what, quota.View{Key: key, Store: "redis", URL: url})
}

// quotaRedisError reports err, from a look at the quota key in the Redis
// at url under ctx: a Redis that did not answer in time as such, not as
// Go's "context deadline exceeded".
func quotaRedisError(ctx context.Context, opts *QuotaOptions, url, key string, err error) error {
	ios := opts.IO
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && errors.Is(err, throttle.ErrBackend) {
		return reportf(ios, ExitBackend, "redis %s: quota %q: no answer for %s", url, key, opts.redisTimeout())
	}
	return reportf(ios, quotaExitCode(err), "redis %s: %s", url, redisrate.RedactURL(userMessage(err)))
}
