package cmd

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/throttle/localstore"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// This file holds the flags of the shared backends: Redis (package
// redisrate: --redis, --redis-timeout) and the local store (package
// localstore: --key without --redis, --state), with --key and
// --global-jobs for both. Package limiter opens them. Passwords in the URL
// never reach any message.

// redisURLEnv names the environment variable that supplies --redis.
const redisURLEnv = "PACE_REDIS_URL"

// RedisOptions are the flags that make the limiter shared: through Redis
// by every pace process naming the same Redis and key, or, with --key and
// no Redis, through the local store by every pace process on this host
// naming the same key (and --state). The zero value means neither; check
// fills in the defaults.
type RedisOptions struct {
	// URL is --redis, or $PACE_REDIS_URL when the flag is not given;
	// empty means the in-memory limiter of one process.
	URL string
	// Key names the shared quota (--key); empty means redisrate.DefaultKey
	// with Redis. Without Redis, a key makes the quota the local store's
	// (Local).
	Key string
	// GlobalJobs caps the jobs in flight across every process sharing the
	// key (--global-jobs); 0 means no cap.
	GlobalJobs int
	// Timeout is how long pace keeps retrying a Redis that does not
	// answer before it gives up with exit status 3 (--redis-timeout); 0
	// means redisrate.DefaultTimeout. The local store does not use it: it
	// gives up after localstore.DefaultTimeout.
	Timeout time.Duration
	// State is the directory of the local store (--state); empty means
	// localstore.DefaultDir().
	State string

	urlSet, keySet, timeoutSet, stateSet bool // the flags were given
}

// Local reports whether the checked options keep the quota in the local
// store: a --key without a Redis.
func (o *RedisOptions) Local() bool { return o.URL == "" && o.keySet }

// redisHelp is the Redis part of pace run's and pace fetch's --help.
const redisHelp = `Sharing rules across processes:
  --redis URL (or $PACE_REDIS_URL; redis://, rediss:// for TLS, unix://)
  makes every pace process naming the same Redis and --key keep one set
  of rules together, admitted by one atomic script on Redis's clock.
  Processes giving a key different rules are refused (exit 2) before
  anything runs. --global-jobs N caps jobs in flight across the fleet
  with leases that come back if a process dies. If Redis stops
  answering, nothing new starts; pace retries and goes on when Redis is
  back, or lets running jobs finish and exits 3 after --redis-timeout.
  Passwords are never printed. See docs/redis.md.

  --key NAME without --redis shares the quota with every pace process on
  this host naming the same key, through a file in --state DIR (default
  $PACE_STATE_DIR, $XDG_STATE_HOME/pace or ~/.local/state/pace): the same
  rules, refusals (exit 2) and --global-jobs, with slots that come back
  at once when a process dies. "pace quota show" shows it.`

// addRedisFlags binds the Redis flags of cmd to o.
func addRedisFlags(cmd *cobra.Command, o *RedisOptions) {
	fl := cmd.Flags()
	// The default is never shown: $PACE_REDIS_URL may hold a password.
	fl.Var(redisURLValue{&o.URL, &o.urlSet}, "redis",
		"share the rules with every pace process using the same Redis `URL` and --key:\n"+
			"redis://[user:password@]host[:port][/db], rediss:// for TLS, unix:///path/to/socket\n"+
			"(default $"+redisURLEnv+"; --redis= ignores it)")
	fl.Var(setStringValue{&o.Key, &o.keySet}, "key",
		"the `NAME` of a quota kept in Redis with --redis (default \""+redisrate.DefaultKey+"\"),\n"+
			"or on this host without it (see --state): processes naming the same quota share its rules")
	fl.IntVar(&o.GlobalJobs, "global-jobs", 0,
		"with --redis or --key: run at most `N` jobs at once across every process sharing the key (0: no cap)")
	fl.Var(setStringValue{&o.State, &o.stateSet}, "state",
		"with --key and no --redis: keep the local quota in `DIR`\n(default $PACE_STATE_DIR, else $XDG_STATE_HOME/pace, else a per-user directory)")
	fl.Var(setDurationValue{&o.Timeout, &o.timeoutSet}, "redis-timeout",
		"with --redis: when Redis has not answered for `DURATION`, start nothing more,\nlet running jobs finish and exit 3")
	// The defaults are filled in by check, so that it can tell whether a
	// flag was given; help shows them all the same.
	fl.Lookup("redis-timeout").DefValue = redisrate.DefaultTimeout.String()
	for _, name := range []string{"redis", "key", "global-jobs", "redis-timeout"} {
		cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
	cmd.MarkFlagDirname("state")
}

// redisURLValue is the pflag.Value of --redis (pace run, fetch, exec,
// proxy and quota). It remembers that the flag was given, so that
// --redis= can turn $PACE_REDIS_URL off, and shows the URL only with its
// password redacted.
type redisURLValue struct {
	url *string
	set *bool
}

func (v redisURLValue) String() string {
	if v.url == nil {
		return ""
	}
	return redisrate.RedactURL(*v.url)
}

func (v redisURLValue) Set(s string) error {
	*v.url, *v.set = s, true
	return nil
}

func (redisURLValue) Type() string { return "URL" }

// check validates the Redis flags and fills in their defaults, taking the
// URL from $PACE_REDIS_URL when --redis was not given. hasRules says
// whether -r gave any rule.
func (o *RedisOptions) check(hasRules bool) error {
	if !o.urlSet {
		o.URL = os.Getenv(redisURLEnv)
	}
	if o.URL == "" {
		return o.checkLocal(hasRules)
	}
	from := `"--redis"`
	if !o.urlSet {
		from = "$" + redisURLEnv
	}
	keyErr := redisrate.CheckKey(o.Key)
	switch {
	case o.stateSet:
		return flagErrorf("--state is the local store's directory, but %s keeps the quota in Redis; leave one out (--redis= ignores $%s)", from, redisURLEnv)
	case o.keySet && o.Key == "":
		return flagErrorf("invalid argument \"\" for \"--key\": want a name; leave --key out for the shared default quota %q", redisrate.DefaultKey)
	case keyErr != nil:
		return flagErrorf("invalid argument %q for \"--key\": %v", clip(o.Key, 64), keyErr)
	case o.GlobalJobs < 0:
		return flagErrorf("invalid argument %d for \"--global-jobs\": want at least 1, or 0 for no cap", o.GlobalJobs)
	case o.timeoutSet && o.Timeout <= 0:
		return flagErrorf("invalid argument %v for \"--redis-timeout\": want more than 0, such as 30s", o.Timeout)
	case !hasRules && o.GlobalJobs == 0:
		return flagErrorf("%s shares rate rules and --global-jobs with other processes: give -r, --global-jobs or both", from)
	}
	if _, err := redisrate.ParseURL(o.URL); err != nil {
		return flagErrorf("invalid %s: %v", from, err) // the error shows the URL redacted
	}
	if o.Key == "" {
		o.Key = redisrate.DefaultKey
	}
	if o.Timeout == 0 {
		o.Timeout = redisrate.DefaultTimeout
	}
	return nil
}

// checkLocal validates the flags without a Redis: a --key makes the quota
// the local store's, and the other flags of a shared quota need one.
// --redis-timeout stays Redis's: the local store gives up on a store it
// cannot lock or read after localstore.DefaultTimeout.
func (o *RedisOptions) checkLocal(hasRules bool) error {
	switch {
	case o.timeoutSet:
		return flagErrorf("--redis-timeout needs --redis (or $%s); the local store (--key) gives up after %s on a store it cannot lock or read",
			redisURLEnv, localstore.DefaultTimeout)
	case !o.keySet && o.GlobalJobs != 0:
		return flagErrorf("--global-jobs needs --redis URL (processes sharing a Redis) or --key NAME (processes on this host); -j caps the jobs of one process")
	case !o.keySet && o.stateSet:
		return flagErrorf("--state is where the local store keeps quotas: give --key NAME too")
	case !o.keySet:
		return nil
	case o.Key == "":
		return flagErrorf("invalid argument \"\" for \"--key\": want a name, such as api")
	case o.stateSet && o.State == "":
		return flagErrorf("invalid argument \"\" for \"--state\": want a directory; leave --state out for the default")
	case o.GlobalJobs < 0:
		return flagErrorf("invalid argument %d for \"--global-jobs\": want at least 1, or 0 for no cap", o.GlobalJobs)
	case !hasRules && o.GlobalJobs == 0:
		return flagErrorf("--key %s shares rate rules and --global-jobs with the other pace processes on this host: give -r, --global-jobs or both", o.Key)
	}
	return nil
}

// clip returns s cut to n bytes, with "..." to say so.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
