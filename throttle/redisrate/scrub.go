package redisrate

import (
	"context"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/internal/redact"
)

// NewClient returns a client for uo whose errors never hold its password
// (or a user name, which may be a token): a server that echoes what it was
// sent (not Redis, a misrouted port) would otherwise put the AUTH command,
// password included, into an error message and a CI log.
func NewClient(uo *redis.UniversalOptions) redis.UniversalClient {
	c := redis.NewUniversalClient(uo)
	var secrets []string
	for _, s := range []string{uo.Password, uo.Username} {
		// A short one would turn every message into placeholders.
		if len(s) >= 4 && s != "default" {
			secrets = append(secrets, s, redact.Placeholder)
		}
	}
	if len(secrets) > 0 {
		c.AddHook(scrubHook{strings.NewReplacer(secrets...)})
	}
	return c
}

// scrubHook replaces secrets in the errors of every command and dial.
type scrubHook struct{ r *strings.Replacer }

func (h scrubHook) scrub(err error) error {
	if err == nil {
		return nil
	}
	if msg := err.Error(); h.r.Replace(msg) != msg {
		return &scrubbed{msg: h.r.Replace(msg), err: err}
	}
	return err
}

func (h scrubHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		return c, h.scrub(err)
	}
}

func (h scrubHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if s := h.scrub(err); s != err {
			cmd.SetErr(s)
			return s
		}
		return err
	}
}

func (h scrubHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if e := c.Err(); e != nil {
				if s := h.scrub(e); s != e {
					c.SetErr(s)
				}
			}
		}
		return h.scrub(err)
	}
}

// scrubbed is an error whose message had a secret: it says the rest, and
// is still the error it was for errors.Is and errors.As.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }
