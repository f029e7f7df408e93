package throttle

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ParseRedisURL parses a Redis URL into options for redis.NewUniversalClient:
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
func ParseRedisURL(s string) (*redis.UniversalOptions, error) {
	fail := func(err error) (*redis.UniversalOptions, error) {
		return nil, fmt.Errorf("throttle: redis url %q: %w", RedactURL(s), err)
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Error repeats the whole URL, password included.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return fail(err)
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
		return fail(err)
	}
	if len(extra) > 0 {
		cluster = true
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
		PoolFIFO:              o.PoolFIFO,
		PoolSize:              o.PoolSize,
		PoolTimeout:           o.PoolTimeout,
		MinIdleConns:          o.MinIdleConns,
		MaxIdleConns:          o.MaxIdleConns,
		MaxActiveConns:        o.MaxActiveConns,
		ConnMaxIdleTime:       o.ConnMaxIdleTime,
		ConnMaxLifetime:       o.ConnMaxLifetime,
		TLSConfig:             o.TLSConfig,
	}, nil
}

// RedactURL returns s with the password of its user info, if any, replaced
// by "xxxxx", for messages and logs. It also redacts URLs that do not
// parse. A URL without a password is returned unchanged.
func RedactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		if _, ok := u.User.Password(); ok {
			return u.Redacted()
		}
		if u.User != nil || !strings.Contains(s, "@") {
			return s
		}
	}
	// Unparseable (or parsed without user info although an '@' is there):
	// treat everything between "://" and the last '@' as user info.
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		scheme, rest = "", s
	} else {
		scheme += "://"
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return s
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return s
	}
	return scheme + user + ":xxxxx" + rest[at:]
}
