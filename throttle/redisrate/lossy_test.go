package redisrate_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// Tests of scripts run again after Redis ran them but its answer was
// lost: a link that fails between Redis's reply and the client makes the
// limiter (or go-redis, with retries of its own) send the script again.

// lossyProxy forwards connections from a loopback port to a Redis, and
// cuts the connection instead of forwarding the first reply (other than
// an error reply, such as NOSCRIPT) to a call of the script it is armed
// for: Redis ran the script, and its answer never comes.
type lossyProxy struct {
	ln      net.Listener
	target  string
	sha     []byte      // the digest of the script whose reply is dropped
	pending atomic.Bool // a call of the script went through: drop its reply
	dropped atomic.Int32
	wg      sync.WaitGroup
}

// startLossyProxy starts a proxy to target that drops the reply of the
// first call of the script with digest sha, stopped when the test ends.
func startLossyProxy(t *testing.T, target, sha string) *lossyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lossyProxy{ln: ln, target: target, sha: []byte(sha)}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		_ = ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *lossyProxy) Addr() string { return p.ln.Addr().String() }

func (p *lossyProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		// Either direction ending ends both: the connection is cut.
		cut := sync.OnceFunc(func() {
			_ = c.Close()
			_ = s.Close()
		})
		p.wg.Go(func() {
			defer cut()
			p.requests(c, s)
		})
		p.wg.Go(func() {
			defer cut()
			p.replies(s, c)
		})
	}
}

// requests forwards the client's requests to the server, marking a call
// of the script pending before Redis can answer it. go-redis sends one
// command at a time on a connection, and only once it has read the reply
// to the one before.
func (p *lossyProxy) requests(c, s net.Conn) {
	buf := make([]byte, 64<<10)
	var tail []byte // the end of the chunk before: a digest may span two reads
	for {
		n, err := c.Read(buf)
		if n > 0 {
			seen := append(tail, buf[:n]...)
			if p.dropped.Load() == 0 && bytes.Contains(seen, p.sha) {
				p.pending.Store(true)
			}
			tail = append([]byte(nil), seen[max(0, len(seen)-len(p.sha)):]...)
			if _, err := s.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// replies forwards the server's replies to the client, but for the first
// reply that is not an error to a pending call, where it cuts the
// connection instead.
func (p *lossyProxy) replies(s, c net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			if buf[0] != '-' && p.pending.Load() && p.dropped.Load() == 0 {
				p.dropped.Add(1)
				p.pending.Store(false)
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// lossyRetriers are the two layers that send a script again once its
// answer is lost: the limiter (go-redis retries nothing) and go-redis
// itself (its default of 3 retries, which pace's URLs keep).
var lossyRetriers = []struct {
	name       string
	maxRetries int
}{{"limiter", -1}, {"go-redis", 3}}

// lossyClient returns a client of addr whose retries are maxRetries'.
func lossyClient(t *testing.T, addr string, maxRetries int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 4, MaxRetries: maxRetries,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A correction whose answer is lost is sent again, and runs again in
// Redis: it is recorded once all the same, in a cost log and in a
// counter, and the next calls are admitted exactly as the true cost says.
func TestLiveCorrectAnswerLost(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	cases := []struct {
		name     string
		from, to int
	}{
		{"lower", 8, 5},  // a refund: counted twice, it let calls over the limit
		{"higher", 2, 4}, // counted twice, it held room that was free
	}
	for _, m := range modes {
		for _, r := range lossyRetriers {
			for _, c := range cases {
				t.Run(m.name+"/"+r.name+"/"+c.name, func(t *testing.T) {
					t.Parallel()
					p := startLossyProxy(t, srv.Addr(), redisrate.CorrectSHA)
					key := "lost-" + m.name + "-" + r.name + "-" + c.name
					l := liveOpen(t, lossyClient(t, p.Addr(), r.maxRetries), key, "cost:10/1m", m.o)
					a, err := l.Admit(ctx, c.from)
					if err != nil {
						t.Fatal(err)
					}
					if err := a.Correct(ctx, c.to); err != nil {
						t.Fatalf("Correct(%d) = %v", c.to, err)
					}
					if p.dropped.Load() != 1 {
						t.Fatal("the correction's answer went through: nothing was tested")
					}
					rk := l.Keys()[1]
					if m.name == "log" {
						if sum := do(t, srv, "GET", rk+":sum"); sum != strconv.Itoa(c.to) {
							t.Errorf("GET %s:sum = %s, want %d", rk, sum, c.to)
						}
					} else if total := do(t, srv, "HGET", rk, "total"); total != strconv.Itoa(c.to) {
						t.Errorf("HGET %s total = %s, want %d", rk, total, c.to)
					}
					checkRoomLeft(t, l, c.to)
				})
			}
		}
	}
}

// The proxy forwards what it does not drop: a client sees every other
// reply, and the cut connection as an error that is not Redis's.
func TestLossyProxy(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	p := startLossyProxy(t, srv.Addr(), "dropme")
	c := lossyClient(t, p.Addr(), -1)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the proxy: %v", err)
	}
	err := c.Get(ctx, "dropme").Err()
	var re redis.Error
	if err == nil || errors.As(err, &re) || p.dropped.Load() != 1 {
		t.Fatalf("GET dropme = %v after %d replies dropped, want the connection cut once", err, p.dropped.Load())
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET k = %q, %v after the cut, want v", v, err)
	}
}

// An admission whose answer is lost is sent again and runs again in
// Redis: a log then holds the call once (the second run finds its member
// there), and a cost log's sum counts its cost once. (A counter cannot
// tell a call run again from a new one: it counts it twice, on the safe
// side.)
func TestLiveAdmitAnswerLost(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, r := range lossyRetriers {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			p := startLossyProxy(t, srv.Addr(), redisrate.AdmitSHA)
			l := liveOpen(t, lossyClient(t, p.Addr(), r.maxRetries), "lost-admit-"+r.name, "3/1m,cost:10/1m", redisrate.Options{})
			if _, err := l.Admit(ctx, 4); err != nil {
				t.Fatal(err)
			}
			if p.dropped.Load() != 1 {
				t.Fatal("the admission's answer went through: nothing was tested")
			}
			keys := l.Keys()
			if n := do(t, srv, "ZCARD", keys[1]); n != "1" {
				t.Errorf("ZCARD %s = %s, want 1", keys[1], n)
			}
			if sum := do(t, srv, "GET", keys[4]); sum != "4" {
				t.Errorf("GET %s = %s, want 4", keys[4], sum)
			}
			checkRoomLeft(t, l, 4)
		})
	}
}

// A take of a fleet-wide slot whose answer is lost is sent again and finds
// its lease already held: the process holds one slot, which its release
// gives back.
func TestLiveTakeAnswerLost(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, r := range lossyRetriers {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			p := startLossyProxy(t, srv.Addr(), redisrate.SlotsSHA)
			l := liveOpen(t, lossyClient(t, p.Addr(), r.maxRetries), "lost-take-"+r.name, "100/s", redisrate.Options{GlobalJobs: 2})
			a, err := l.Admit(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if p.dropped.Load() != 1 {
				t.Fatal("the take's answer went through: nothing was tested")
			}
			slots := l.Keys()[len(l.Keys())-1]
			if n := do(t, srv, "ZCOUNT", slots, "0", "+inf"); n != "1" {
				t.Errorf("%s holds %s slots with one call in flight, want 1", slots, n)
			}
			a.Release()
			if n := do(t, srv, "ZCOUNT", slots, "0", "+inf"); n != "0" {
				t.Errorf("%s holds %s slots once released, want 0", slots, n)
			}
		})
	}
}

// A reset whose answer is lost, and which go-redis sends again, finds the
// quota gone: it was reset, and Reset says so rather than that there was
// no quota.
func TestLiveResetAnswerLost(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	l := liveOpen(t, liveClient(t, srv.Addr()), "lost-reset", "10/s", redisrate.Options{})
	if _, err := l.Admit(ctx, 1); err != nil {
		t.Fatal(err)
	}
	p := startLossyProxy(t, srv.Addr(), redisrate.ResetSHA)
	if err := redisrate.Reset(ctx, lossyClient(t, p.Addr(), 3), "lost-reset"); err != nil {
		t.Errorf("Reset = %v, want nil", err)
	}
	if p.dropped.Load() != 1 {
		t.Fatal("the reset's answer went through: nothing was tested")
	}
	for _, k := range l.Keys() {
		if n := do(t, srv, "EXISTS", k); n != "0" {
			t.Errorf("EXISTS %s = %s after Reset, want 0", k, n)
		}
	}
}

// checkRoomLeft checks that l, whose rule cost:10/1m holds held, admits
// what is left of 10 at once, and then no more.
func checkRoomLeft(t *testing.T, l *redisrate.Limiter, held int) {
	t.Helper()
	if n, _, _, used, err := redisrate.AdmitBatch(l, []int{10 - held}); err != nil || n != 1 {
		t.Errorf("admitting a cost of %d beside %d: %d admitted (use %v, err %v), want 1", 10-held, held, n, used, err)
	}
	if n, _, _, used, err := redisrate.AdmitBatch(l, []int{1}); err != nil || n != 0 {
		t.Errorf("admitting a cost of 1 once 10 is held: %d admitted (use %v, err %v), want 0", n, used, err)
	}
}
