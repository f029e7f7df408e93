package redisrate_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// TestLiveSilentRedis stops a redis-server (SIGSTOP) under two limiters:
// it keeps its connections and answers nothing, and go-redis's read
// timeout is 20 s. Admissions waiting on it, for a fleet-wide slot or for
// the rates, return as soon as they are cancelled; a release and Close
// wait a second at most. Once the server is continued nothing stays held:
// the slots go back (or run out with their one-second leases), and Redis
// has recorded at least every admission made (an admission recorded for a
// caller who left is quota spent, on the safe side).
func TestLiveSilentRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	url := "redis://" + srv.Addr() + "?read_timeout=20s&dial_timeout=20s"
	ctx := context.Background()
	const bound = 5 * time.Second // well short of the read timeout; generous for a loaded machine
	slots, err := redisrate.Dial(ctx, url, redisrate.Options{Key: "slots", Rules: mustRules(t, "100/h"),
		GlobalJobs: 2, Lease: redisrate.MinLease, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer slots.Close()
	rates, err := redisrate.Dial(ctx, url, redisrate.Options{Key: "rates", Rules: mustRules(t, "100/h"), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer rates.Close()
	held, err := slots.Admit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	defer srv.Continue()

	for _, l := range []*redisrate.Limiter{slots, rates} {
		actx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := l.Admit(actx, 1)
			done <- err
		}()
		time.Sleep(200 * time.Millisecond)
		start := time.Now()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("quota %v: Admit cancelled while Redis is stopped = %v, want context.Canceled", l.Keys()[0], err)
		}
		if d := time.Since(start); d > bound {
			t.Errorf("quota %v: Admit returned %v after it was cancelled, want at once", l.Keys()[0], d)
		}
	}
	if d := elapsed(held.Release); d > bound {
		t.Errorf("Release took %v while Redis is stopped, want at most a second", d)
	}
	for _, l := range []*redisrate.Limiter{slots, rates} {
		if d := elapsed(func() { l.Close() }); d > bound {
			t.Errorf("quota %v: Close took %v while Redis is stopped, want at most a second", l.Keys()[0], d)
		}
	}

	srv.Continue()
	waitFor(t, "the slots to be free", 10*time.Second, func() bool {
		return do(t, srv, "ZCOUNT", "pace:{slots}:slots", "0", "+inf") == "0"
	})
	for _, tt := range []struct {
		l        *redisrate.Limiter
		admitted int
	}{{slots, 1}, {rates, 0}} {
		k := tt.l.Keys()[1] // rule 0's log
		if n, _ := strconv.Atoi(do(t, srv, "ZCARD", k)); n < tt.admitted || n > tt.admitted+1 {
			t.Errorf("%s holds %d admissions, want %d (the admissions made) or one more (recorded for a caller who left)", k, n, tt.admitted)
		}
	}
}
