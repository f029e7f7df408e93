package redisrate_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/tcptest"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// A URL whose port is a web server's (or anything else that answers in
// another protocol) is the URL's fault, which no wait cures: pace said
// Redis was "not answering" and waited out the timeout (30s by default).
// Now Dial fails at once, saying the server does not speak Redis's
// protocol, and never shows the password.
func TestLiveNotRedis(t *testing.T) {
	t.Parallel()
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<!DOCTYPE HTML>", http.StatusBadRequest)
	}))
	t.Cleanup(web.Close)
	addr := strings.TrimPrefix(web.URL, "http://")
	// RESP3 (HELLO, go-redis's default) and RESP2 fail to parse the
	// answer in different words.
	for _, url := range []string{"redis://:s3cret@" + addr, "redis://" + addr + "?protocol=2"} {
		var o outages
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := redisrate.Dial(ctx, url, redisrate.Options{Rules: mustRules(t, "10/s"), Timeout: 10 * time.Second, OnOutage: o.report})
		cancel()
		if !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), "does not speak the Redis protocol") ||
			strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Dial(%s, a web server) = %v; want ErrBackend saying it does not speak the Redis protocol, without the password", url, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Dial(%s, a web server) gave up after %v, want at once, not after the 10s timeout", url, d)
		}
		if got := o.get(); len(got) != 0 {
			t.Errorf("%s: OnOutage heard %+v, want nothing: the URL is wrong, Redis is not down", url, got)
		}
	}
}

// A server that closes every connection before answering (a Redis that
// takes only TLS, given redis://; a service that is not Redis) is waited
// for, as a proxy whose Redis is down would be, but the words say what to
// look at: they were only "is not answering (EOF)" and "no answer for
// 30s: ...: EOF".
func TestLiveClosesAtOnce(t *testing.T) {
	t.Parallel()
	addr := tcptest.Serve(t, func(net.Conn) {}) // closed as soon as accepted
	var o outages
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := redisrate.Dial(ctx, "redis://:s3cret@"+addr, redisrate.Options{Rules: mustRules(t, "10/s"), Timeout: 2 * time.Second, OnOutage: o.report})
	const want = "the server closes the connection before answering (a TLS port wants rediss://)"
	if !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Dial(a server that closes at once) = %v; want ErrBackend saying %q", err, want)
	}
	if got := o.get(); len(got) == 0 || got[0].Err == nil || !strings.Contains(got[0].Err.Error(), want) {
		t.Errorf("OnOutage heard %+v; want Down with an error saying %q", got, want)
	}
}
