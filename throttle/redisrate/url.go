package redisrate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/pace-cli/pace/internal/redact"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// ParseURL parses a Redis URL into options for redis.NewUniversalClient:
//
//	redis://[user[:password]@]host[:port][/db][?option=value...]
//	rediss://...                  the same over TLS
//	unix://[user[:password]@]/path/to/socket[?db=N&...]
//
// Options are go-redis's (dial_timeout=3s, read_timeout, pool_size, ...)
// plus two for Redis Cluster: addr=host:port, repeatable, adds seed nodes,
// and cluster=true asks for a cluster client even with one address. A
// password is never part of an error message: errors show the URL as
// RedactURL does. Calls are bounded by their context's deadline
// (ContextTimeoutEnabled).
func ParseURL(s string) (*redis.UniversalOptions, error) {
	fail := func(err error) (*redis.UniversalOptions, error) {
		return nil, fmt.Errorf("redis url %q: %w", RedactURL(s), err)
	}
	scheme, after, ok := strings.Cut(s, ":")
	if !ok || !strings.HasPrefix(after, "//") || strings.ContainsAny(scheme, "/?#@") {
		// "redis:u:pw@host" or "redis:/u:pw@host": no authority to tell
		// a password from a host by, so nothing after the scheme is
		// shown. go-redis would take the first for localhost:6379.
		shown := redact.Placeholder
		if ok && !strings.ContainsAny(scheme, "/?#@") {
			shown = scheme + ":" + redact.Placeholder
		}
		return nil, fmt.Errorf("redis url %q: not a URL such as redis://user:password@host:6379/0 (the scheme is followed by //)", shown)
	}
	u, err := url.Parse(s)
	if err != nil {
		// The parser's message quotes part of the URL (url.Error all of
		// it, "invalid port" what follows a # in a password): none of it.
		return fail(errors.New("not a URL such as redis://user:password@host:6379/0: percent-encode characters such as # / ? @ % and spaces in the user name and password"))
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
	default:
		sentinel := ""
		if strings.Contains(u.Scheme, "sentinel") {
			sentinel = "; Redis Sentinel is not supported"
		}
		return fail(fmt.Errorf("scheme %q: want redis://, rediss:// (TLS) or unix:// (a socket)%s", u.Scheme, sentinel))
	}
	if u.Host == "" && (u.Scheme == "redis" || u.Scheme == "rediss") {
		// go-redis would take localhost:6379: a quota kept in another
		// Redis than the user meant, without a word.
		return fail(errors.New("no host: want redis://HOST:PORT, such as redis://localhost:6379"))
	}
	q := u.Query()
	extra := q["addr"]
	cluster := false
	switch v := q.Get("cluster"); v {
	case "", "false", "0":
	case "true", "1":
		cluster = true
	default:
		return fail(fmt.Errorf("cluster=%q: want true or false", v))
	}
	q.Del("addr")
	q.Del("cluster")
	u.RawQuery = q.Encode()
	o, err := redis.ParseURL(u.String())
	if err != nil {
		// go-redis's words, without its package prefix.
		return fail(errors.New(strings.TrimPrefix(RedactURL(err.Error()), "redis: ")))
	}
	if len(extra) > 0 {
		cluster = true
	}
	if o.Network != "unix" {
		for _, addr := range append([]string{o.Addr}, extra...) {
			// A dial would fail each time, for as long as the timeout
			// allows, as if Redis were down.
			_, port, err := net.SplitHostPort(addr)
			if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
				return fail(fmt.Errorf("address %q: want host:port with a port from 1 to 65535", RedactURL(addr)))
			}
		}
	}
	if cluster && o.Network == "unix" {
		return fail(errors.New("a cluster is reached over tcp, not a unix socket"))
	}
	if cluster && o.DB != 0 {
		return fail(fmt.Errorf("database %d: a cluster has only database 0", o.DB))
	}
	if o.Network == "unix" && !strings.HasPrefix(o.Addr, "/") {
		return fail(fmt.Errorf("socket path %q: want an absolute path", o.Addr))
	}
	return &redis.UniversalOptions{
		Addrs:                 append([]string{o.Addr}, extra...),
		IsClusterMode:         cluster,
		ClientName:            o.ClientName,
		DB:                    o.DB,
		Protocol:              o.Protocol,
		Username:              o.Username,
		Password:              o.Password,
		MaxRetries:            o.MaxRetries,
		MinRetryBackoff:       o.MinRetryBackoff,
		MaxRetryBackoff:       o.MaxRetryBackoff,
		DialTimeout:           o.DialTimeout,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		ContextTimeoutEnabled: true,
		// A new connection costs one round trip (HELLO), not three: no
		// CLIENT SETINFO (the client library's name and version), and no
		// CLIENT MAINT_NOTIFICATIONS (a managed service's notices of
		// maintenance, which the limiter's retries ride out anyway).
		// Over a slow link each is a round trip before the first
		// admission of every process (docs/design.md).
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		PoolFIFO:                 o.PoolFIFO,
		PoolSize:                 o.PoolSize,
		PoolTimeout:              o.PoolTimeout,
		MinIdleConns:             o.MinIdleConns,
		MaxIdleConns:             o.MaxIdleConns,
		MaxActiveConns:           o.MaxActiveConns,
		ConnMaxIdleTime:          o.ConnMaxIdleTime,
		ConnMaxLifetime:          o.ConnMaxLifetime,
		TLSConfig:                o.TLSConfig,
	}, nil
}

// Dial parses rawURL (see ParseURL), makes a client for it and opens a
// limiter on it (see Open). The limiter owns the client: Close closes it.
// Errors never show the URL's password. An address where nothing listens
// (every address refuses connections) fails at once with an error
// wrapping throttle.ErrBackend instead of being waited for as an outage.
func Dial(ctx context.Context, rawURL string, opts Options) (*Limiter, error) {
	uo, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if err := probe(ctx, uo); err != nil {
		return nil, err
	}
	client := NewClient(uo)
	l, err := newLimiter(client, opts)
	if err != nil {
		client.Close()
		return nil, err
	}
	l.owned = true
	if err := l.checkStored(ctx); err != nil {
		// A check left behind (ctx cancelled while Redis was silent)
		// ends with the client.
		l.endLife()
		client.Close()
		l.calls.Wait()
		return nil, err
	}
	return l, nil
}
