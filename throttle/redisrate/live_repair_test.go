package redisrate_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// scores returns the scores (µs) of the sorted set key, ascending.
func scores(t *testing.T, srv *redistest.Server, key string) []int64 {
	t.Helper()
	r, err := srv.Do("ZRANGE", key, "0", "-1", "WITHSCORES")
	if err != nil {
		t.Fatalf("ZRANGE %s: %v", key, err)
	}
	var out []int64
	if r == "" {
		return nil
	}
	for i, f := range strings.Split(r, "\n") {
		if i%2 == 1 {
			n, err := strconv.ParseFloat(f, 64)
			if err != nil {
				t.Fatalf("ZRANGE %s: score %q", key, f)
			}
			out = append(out, int64(n))
		}
	}
	return out
}

// admitN admits n calls of cost 1 through l and returns their instants
// (µs, Redis's).
func admitN(t *testing.T, l *redisrate.Limiter, n int) []int64 {
	t.Helper()
	var at []int64
	for range n {
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		at = append(at, a.At.UnixMicro())
	}
	return at
}

// Redis that loses a quota in use (FLUSHALL here; a restart without
// persistence, an eviction, a failover to a lagging replica) forgot the
// calls of the window, and the fleet could go over a rule until they
// would have left it: pace only reported it. Now the admission script
// finds, before it admits anything, that this process's latest call is
// gone, and the process records again every call of its own that a rule
// still counts, then asks again. Once both processes sharing the quota
// have admitted once, Redis holds every call of the window again: in a
// log, and in a bounded counter (which holds no member of a process's
// own: the second process finds that the counter was begun after its
// latest call).
func TestLiveLossRepaired(t *testing.T) {
	t.Parallel()
	for _, m := range []struct {
		name string
		o    redisrate.Options
	}{{"log", redisrate.Options{}}, {"counter", redisrate.Options{CounterAbove: -1}}} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t) // its own: FLUSHALL
			var heardA, heardB losses
			oa, ob := m.o, m.o
			oa.OnLoss, ob.OnLoss = heardA.report, heardB.report
			key := "repair-" + m.name
			a := liveOpen(t, liveClient(t, srv.Addr()), key, "10/2s", oa)
			b := liveOpen(t, liveClient(t, srv.Addr()), key, "10/2s", ob)
			all := slices.Concat(admitN(t, a, 3), admitN(t, b, 2))
			do(t, srv, "FLUSHALL")
			all = append(all, admitN(t, a, 1)...)
			all = append(all, admitN(t, b, 1)...)
			slices.Sort(all)

			if m.o.CounterAbove == 0 {
				if got := scores(t, srv, a.Keys()[1]); !slices.Equal(got, all) {
					t.Errorf("after FLUSHALL and one admission each, the log holds calls at %v, want every call of the window, at %v", got, all)
				}
			} else if got := do(t, srv, "HGET", a.Keys()[1], "total"); got != "7" {
				t.Errorf("after FLUSHALL and one admission each, the counter holds %s calls, want every call of the window, 7", got)
			}
			for _, x := range []struct {
				name  string
				heard *losses
				want  int
			}{{"a", &heardA, 3}, {"b", &heardB, 2}} {
				got := x.heard.get()
				if len(got) != 1 || got[0].Restored != x.want || got[0].Window != 2*time.Second {
					t.Errorf("process %s: OnLoss heard %+v, want one loss, %d calls restored, window 2s", x.name, got, x.want)
				}
			}
			// The quota is whole: the 8th, 9th and 10th calls fit, an 11th not.
			if n, _, _, used, err := redisrate.AdmitBatch(a, []int{1, 1, 1, 1}); err != nil || n != 3 {
				t.Errorf("admitting 4 calls beside 7: %d admitted (use %v, err %v), want 3", n, used, err)
			}
		})
	}
}

// A fleet that keeps admitting through a loss: two processes, each with
// three callers admitting as fast as 10/2s and 1/100ms let them (calls
// spread over each window, not all at its start), and Redis flushed in
// the middle of a window. Between the loss and each process's next admission the
// fleet may go over (a process that has not admitted since cannot have
// recorded its calls again), but once both have, no admission is decided
// with more than 10 calls in the window before it. Without the repair
// the calls before the loss are forgotten for a whole window.
func TestLiveLossKeepsRules(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const n, window = 10, 2 * time.Second
	type proc struct {
		l     *redisrate.Limiter
		heard losses
		mu    sync.Mutex
		at    []int64
	}
	ps := []*proc{{}, {}}
	for _, p := range ps {
		p.l = liveOpen(t, liveClient(t, srv.Addr()), "keep", "10/2s,1/100ms", redisrate.Options{OnLoss: p.heard.report})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*window)
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range ps {
		for range 3 {
			wg.Go(func() {
				for ctx.Err() == nil {
					a, err := p.l.Admit(ctx, 1)
					if err != nil {
						if ctx.Err() == nil {
							t.Errorf("Admit = %v", err)
						}
						return
					}
					p.mu.Lock()
					p.at = append(p.at, a.At.UnixMicro())
					p.mu.Unlock()
				}
			})
		}
	}
	// A full window behind, and the next one half full: then the loss.
	waitFor(t, "15 admissions", 2*window, func() bool {
		got := 0
		for _, p := range ps {
			p.mu.Lock()
			got += len(p.at)
			p.mu.Unlock()
		}
		return got >= 15
	})
	tm := strings.Split(do(t, srv, "TIME"), "\n")
	do(t, srv, "FLUSHALL")
	wg.Wait()
	sec, err1 := strconv.ParseInt(tm[0], 10, 64)
	usec, err2 := strconv.ParseInt(tm[len(tm)-1], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("TIME = %q", tm)
	}
	flushed := sec*1e6 + usec

	// Each process's first admission after the loss came after its
	// repair, if it had calls in the window to repair (it then heard the
	// loss), or after its calls had all left the window (it had nothing
	// to repair): from the later of the two on, Redis holds every call
	// of the window.
	var all []int64
	var cutoff int64
	heard := 0
	for i, p := range ps {
		all = append(all, p.at...)
		before, after := int64(-1), int64(-1)
		for _, at := range p.at {
			if at < flushed {
				before = max(before, at)
			} else if after < 0 || at < after {
				after = at
			}
		}
		if after < 0 {
			t.Fatalf("process %d admitted nothing after the loss (%d calls before it, the last at %d µs, the loss at %d µs); OnLoss heard %+v",
				i, len(p.at), before, flushed, p.heard.get())
		}
		cutoff = max(cutoff, after)
		switch got := p.heard.get(); {
		case len(got) == 1 && got[0].At.UnixMicro() >= flushed && got[0].Restored > 0:
			heard++
		case len(got) == 0 && after-before >= window.Microseconds():
			// Its latest call had left the window when it next asked.
		default:
			t.Fatalf("process %d: last admission before the loss at %d µs, first after at %d µs (%d µs later); OnLoss heard %+v",
				i, before, after, after-before, got)
		}
	}
	if heard == 0 {
		t.Fatal("no process heard the loss: nothing was tested")
	}
	slices.Sort(all)
	over, first, before := 0, int64(0), 0
	lo := 0
	for i, at := range all {
		for all[lo] <= at-window.Microseconds() {
			lo++
		}
		hi := i
		for hi+1 < len(all) && all[hi+1] == at {
			hi++
		}
		switch {
		case hi-lo+1 <= n:
		case at < cutoff:
			before++
		default:
			if over == 0 {
				first = at
			}
			over++
		}
	}
	t.Logf("%d admissions, %d over a window before both processes had admitted again after the loss (%d µs after it), %d after",
		len(all), before, cutoff-flushed, over)
	if over > 0 {
		t.Errorf("%d admissions decided after both processes recorded their calls again (from %d µs) had more than %d calls in the %v before them; the first at %d µs",
			over, cutoff, n, window, first)
	}
	if len(all) < 3*n {
		t.Errorf("%d admissions in %v, want about %d: the test proved little", len(all), 3*window, 3*n)
	}
}

// pace quota reset forgets a quota on purpose: processes still running
// must not record their calls again, as they do in a quota Redis lost.
// The reset leaves its instant in the quota; calls before it stay
// forgotten, and nothing is reported.
func TestLiveResetNotUndone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	var heardA, heardB losses
	a := liveOpen(t, liveClient(t, srv.Addr()), "reset", "10/2s", redisrate.Options{OnLoss: heardA.report})
	b := liveOpen(t, liveClient(t, srv.Addr()), "reset", "10/2s", redisrate.Options{OnLoss: heardB.report})
	admitN(t, a, 3)
	admitN(t, b, 2)
	if err := redisrate.Reset(ctx, liveClient(t, srv.Addr()), "reset"); err != nil {
		t.Fatal(err)
	}
	after := slices.Concat(admitN(t, a, 1), admitN(t, b, 1))
	slices.Sort(after)
	if got := scores(t, srv, a.Keys()[1]); !slices.Equal(got, after) {
		t.Errorf("after the reset, the log holds calls at %v, want only the calls since, at %v", got, after)
	}
	if got := slices.Concat(heardA.get(), heardB.get()); len(got) != 0 {
		t.Errorf("OnLoss heard %+v after pace quota reset, want nothing", got)
	}
	q, err := redisrate.Inspect(ctx, liveClient(t, srv.Addr()), "reset")
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Rules) != 1 || q.Rules[0].Used != 2 {
		t.Errorf("Inspect after the reset = %+v, want 10/2s using 2", q.Rules)
	}

	// Redis that loses the quota after the reset: the calls since the
	// reset are recorded again, those before it are not.
	do(t, srv, "FLUSHALL")
	after = append(after, admitN(t, a, 1)...)
	after = append(after, admitN(t, b, 1)...)
	slices.Sort(after)
	if got := scores(t, srv, a.Keys()[1]); !slices.Equal(got, after) {
		t.Errorf("after the reset and a loss, the log holds calls at %v, want the calls since the reset, at %v", got, after)
	}
}

// A repair whose answer is lost is sent again (by the limiter or by
// go-redis) and runs again in Redis: it records nothing twice. A log
// finds its members there, a cost log's sum counts each cost once, and a
// counter is marked repaired by this process.
func TestLiveRepairAnswerLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, m := range []struct {
		name string
		o    redisrate.Options
	}{{"logs", redisrate.Options{}}, {"counters", redisrate.Options{CounterAbove: -1}}} {
		for _, r := range lossyRetriers {
			t.Run(m.name+"/"+r.name, func(t *testing.T) {
				t.Parallel()
				srv := redistest.Start(t) // its own: FLUSHALL
				p := startLossyProxy(t, srv.Addr(), redisrate.RepairSHA)
				key := "lost-repair-" + m.name + "-" + r.name
				var heard losses
				o := m.o
				o.OnLoss = heard.report
				l := liveOpen(t, lossyClient(t, p.Addr(), r.maxRetries), key, "5/1m,cost:20/1m", o)
				for _, c := range []int{2, 3} {
					if _, err := l.Admit(ctx, c); err != nil {
						t.Fatal(err)
					}
				}
				do(t, srv, "FLUSHALL")
				if _, err := l.Admit(ctx, 4); err != nil {
					t.Fatal(err)
				}
				if p.dropped.Load() != 1 {
					t.Fatal("the repair's answer went through: nothing was tested")
				}
				if got := heard.get(); len(got) != 1 || got[0].Restored != 2 {
					t.Errorf("OnLoss heard %+v, want one loss, 2 calls restored", got)
				}
				// 3 calls of costs 2, 3 and 4 held: 2 more calls fit, of
				// costs adding up to 11.
				if n, _, _, used, err := redisrate.AdmitBatch(l, []int{1}); err != nil || n != 1 {
					t.Errorf("admitting a 4th call, cost 1 beside 9: %d admitted (use %v, err %v), want 1", n, used, err)
				}
				if n, _, _, used, err := redisrate.AdmitBatch(l, []int{10}); err != nil || n != 1 {
					t.Errorf("admitting a 5th call, cost 10 beside 10: %d admitted (use %v, err %v), want 1", n, used, err)
				}
				if n, _, _, used, err := redisrate.AdmitBatch(l, []int{1}); err != nil || n != 0 {
					t.Errorf("admitting a 6th call: %d admitted (use %v, err %v), want 0", n, used, err)
				}
			})
		}
	}
}

// A cost rule's state alone lost (an eviction takes one key): the cost
// log finds the caller's latest call by its instant (a correction changes
// its cost, not its instant, and is no loss), and a counter finds that it
// was begun anew. The calls are recorded again with their corrected
// costs.
func TestLiveLossOfOneKey(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, m := range []struct {
		name string
		o    redisrate.Options
	}{{"log", redisrate.Options{}}, {"counter", redisrate.Options{CounterAbove: -1}}} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			var heard losses
			o := m.o
			o.OnLoss = heard.report
			l := liveOpen(t, liveClient(t, srv.Addr()), "one-key-"+m.name, "cost:20/1m", o)
			a, err := l.Admit(ctx, 3)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Correct(ctx, 5); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Admit(ctx, 3); err != nil {
				t.Fatal(err)
			}
			if got := heard.get(); len(got) != 0 {
				t.Fatalf("OnLoss heard %+v after a correction, want nothing", got)
			}
			do(t, srv, "DEL", l.Keys()[1], l.Keys()[2])
			if _, err := l.Admit(ctx, 3); err != nil {
				t.Fatal(err)
			}
			if got := heard.get(); len(got) != 1 || got[0].Restored != 2 {
				t.Errorf("OnLoss heard %+v after the rule's keys were deleted, want one loss, 2 calls restored", got)
			}
			if used := l.Stats().Rules[0].Used; used != 11 {
				t.Errorf("cost:20/1m holds %d, want 11 (5, 3, and the new 3)", used)
			}
		})
	}
}

// TestLiveLossOfTheSumAlone: a Redis evicting keys one by one can drop a
// cost log's sum and keep the log. The sum is then added up again from
// the log's members, so the calls it held still count: the fleet must
// not take the whole rule again.
func TestLiveLossOfTheSumAlone(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	l := liveOpen(t, liveClient(t, srv.Addr()), "sum-alone", "cost:20/1m", redisrate.Options{})
	a, err := l.Admit(ctx, 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Correct(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Admit(ctx, 8); err != nil {
		t.Fatal(err)
	}
	do(t, srv, "DEL", l.Keys()[2])
	if _, err := l.Admit(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if used := l.Stats().Rules[0].Used; used != 16 {
		t.Errorf("cost:20/1m holds %d after its sum was lost, want 16 (5, 8 and the new 3)", used)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := l.Admit(short, 5); err == nil {
		t.Errorf("a call of cost 5 was admitted where 16 of 20 are used for a minute")
	}
}
