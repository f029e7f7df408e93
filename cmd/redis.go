package cmd

import (
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pace-cli/pace/throttle/redisrate"
)

// This file holds the flags of the Redis backend (package redisrate):
// --redis, --key, --global-jobs and --redis-timeout. backend.go opens it.
// Passwords in the URL never reach any message.

// redisURLEnv names the environment variable that supplies --redis.
const redisURLEnv = "PACE_REDIS_URL"

// RedisOptions are the flags that make the limiter shared through Redis by
// every pace process naming the same Redis and key. The zero value means
// no Redis; check fills in the defaults.
type RedisOptions struct {
	// URL is --redis, or $PACE_REDIS_URL when the flag is not given;
	// empty means the in-memory limiter of one process.
	URL string
	// Key names the shared quota (--key); empty means redisrate.DefaultKey.
	Key string
	// GlobalJobs caps the jobs in flight across every process sharing the
	// key (--global-jobs); 0 means no cap.
	GlobalJobs int
	// Timeout is how long pace keeps retrying a Redis that does not
	// answer before it gives up with exit status 3 (--redis-timeout); 0
	// means redisrate.DefaultTimeout.
	Timeout time.Duration

	urlSet, keySet, timeoutSet bool // the flags were given
}

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
  Passwords are never printed. See docs/redis.md.`

// addRedisFlags binds the Redis flags of cmd to o.
func addRedisFlags(cmd *cobra.Command, o *RedisOptions) {
	fl := cmd.Flags()
	// The default is never shown: $PACE_REDIS_URL may hold a password.
	fl.Var(redisURLValue{o}, "redis",
		"share the rules with every pace process using the same Redis `URL` and --key:\n"+
			"redis://[user:password@]host[:port][/db], rediss:// for TLS, unix:///path/to/socket\n"+
			"(default $"+redisURLEnv+"; --redis= ignores it)")
	fl.Var(setStringValue{&o.Key, &o.keySet}, "key",
		"with --redis: the `NAME` of the shared quota; processes with the same Redis and key share the rules")
	fl.IntVar(&o.GlobalJobs, "global-jobs", 0,
		"with --redis: run at most `N` jobs at once across every process sharing the key (0: no cap)")
	fl.Var(setDurationValue{&o.Timeout, &o.timeoutSet}, "redis-timeout",
		"with --redis: when Redis has not answered for `DURATION`, start nothing more,\nlet running jobs finish and exit 3")
	// The defaults are filled in by check, so that it can tell whether a
	// flag was given; help shows them all the same.
	fl.Lookup("key").DefValue = redisrate.DefaultKey
	fl.Lookup("redis-timeout").DefValue = redisrate.DefaultTimeout.String()
	for _, name := range []string{"redis", "key", "global-jobs", "redis-timeout"} {
		cmd.RegisterFlagCompletionFunc(name, cobra.NoFileCompletions)
	}
}

// redisURLValue is the pflag.Value of --redis. It remembers that the flag
// was given, so that --redis= can turn $PACE_REDIS_URL off, and shows the
// URL only with its password redacted.
type redisURLValue struct{ o *RedisOptions }

func (v redisURLValue) String() string {
	if v.o == nil {
		return ""
	}
	return redisrate.RedactURL(v.o.URL)
}

func (v redisURLValue) Set(s string) error {
	v.o.URL, v.o.urlSet = s, true
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
		switch {
		case o.GlobalJobs != 0:
			return flagErrorf("--global-jobs needs --redis (or $%s); -j caps the jobs of one process", redisURLEnv)
		case o.keySet:
			return flagErrorf("--key needs --redis (or $%s)", redisURLEnv)
		case o.timeoutSet:
			return flagErrorf("--redis-timeout needs --redis (or $%s)", redisURLEnv)
		}
		return nil
	}
	from := `"--redis"`
	if !o.urlSet {
		from = "$" + redisURLEnv
	}
	switch {
	case o.keySet && o.Key == "":
		return flagErrorf("invalid argument \"\" for \"--key\": want a name; leave --key out for the shared default quota %q", redisrate.DefaultKey)
	case strings.ContainsAny(o.Key, "{}"):
		return flagErrorf("invalid argument %q for \"--key\": want a name without '{' or '}'", o.Key)
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
