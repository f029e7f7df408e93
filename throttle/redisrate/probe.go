package redisrate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/throttle"
)

// probeTimeout bounds each connection Dial's probe tries.
const probeTimeout = 2 * time.Second

// probe tells, before anything else, whether a Redis could be listening
// at uo's addresses: it returns an error wrapping throttle.ErrBackend when
// every one of them refuses connections (a wrong address or port, a Redis
// that was never started), which no wait can cure. Anything else (an
// answer, a timeout, a name that does not resolve yet) is left to the
// retries that ride out an outage: a Redis restarting during a run is
// reached by then. On systems whose refusal is not syscall.ECONNREFUSED
// (Windows), nothing is ever refused here.
func probe(ctx context.Context, uo *redis.UniversalOptions) error {
	var refused error
	for _, addr := range uo.Addrs {
		network := "tcp"
		if strings.HasPrefix(addr, "/") {
			network = "unix"
		}
		d := net.Dialer{Timeout: probeTimeout}
		c, err := d.DialContext(ctx, network, addr)
		if err == nil {
			c.Close()
			return nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) && !(network == "unix" && errors.Is(err, syscall.ENOENT)) {
			return nil
		}
		refused = err
	}
	if refused == nil {
		return nil
	}
	return fmt.Errorf("redisrate: connection refused: no Redis listens at %s (a wrong address or port, or Redis not started): %w",
		strings.Join(uo.Addrs, ", "), throttle.ErrBackend)
}
