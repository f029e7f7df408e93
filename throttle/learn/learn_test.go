package learn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// sharedBackend is an in-memory backend that reports itself shared with
// other processes, whose calls add fleet to the caller's rule's count.
type sharedBackend struct {
	*throttle.Limiter
	fleet int
}

func (b *sharedBackend) Stats() throttle.Stats {
	st := b.Limiter.Stats()
	st.Store.Name = "redis"
	for i := range st.Rules {
		st.Rules[i].Used += b.fleet
	}
	return st
}

// slowBackend takes a millisecond to admit, as a remote store does, and
// lets concurrent callers overtake each other.
type slowBackend struct{ *throttle.Limiter }

func (b slowBackend) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	time.Sleep(time.Millisecond)
	return b.Limiter.Admit(ctx, cost)
}

func mem(t *testing.T, rules ...throttle.Rule) *throttle.Limiter {
	t.Helper()
	l, err := throttle.New(throttle.Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

var twentyPerSecond = throttle.Rule{N: 20, Window: time.Second}

// learnRun admits five calls through a learner on b under 20/s, of which
// the server accepts the first `accepted` and refuses the rest with 429,
// and returns the rules the learner then keeps.
func learnRun(t *testing.T, b throttle.Backend, accepted int) []throttle.Rule {
	return learnMore(t, New(b, []throttle.Rule{twentyPerSecond}, Options{}), accepted)
}

// learnMore is learnRun on l.
func learnMore(t *testing.T, l *Backend, accepted int) []throttle.Rule {
	for i := range 5 {
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
		time.Sleep(10 * time.Millisecond)
		code := 200
		if i >= accepted {
			code = 429
		}
		l.Observe(a, Outcome{Status: code, RetryAfter: time.Second})
	}
	return l.Rules()
}

// Alone, a process that had 4 calls accepted before a refusal infers that
// the server allows about 4/s. In a fleet that filled the caller's rule,
// the same refusal says a call arrived early, not that the rule is loose:
// the process must not slow to its own share, unless refusals go on. A
// fleet whose calls were refused learns its share.
func TestLearnerInFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if got := learnRun(t, mem(t, twentyPerSecond), 4); len(got) != 1 || got[0] != (throttle.Rule{N: 4, Window: time.Second}) {
			t.Errorf("alone: learned %v, want 4/s", got)
		}
		l := New(&sharedBackend{mem(t, twentyPerSecond), 15}, []throttle.Rule{twentyPerSecond}, Options{})
		if got := learnMore(t, l, 4); len(got) != 0 {
			t.Errorf("fleet at 20/s, one refusal: learned %v, want nothing", got)
		}
		time.Sleep(time.Second)
		if got := learnMore(t, l, 4); len(got) != 1 || got[0].N > 4 {
			t.Errorf("fleet at 20/s, another refusal a second later: learned %v, want this process's share", got)
		}
		if got := learnRun(t, &sharedBackend{mem(t, twentyPerSecond), 15}, 1); len(got) != 1 || got[0] != (throttle.Rule{N: 1, Window: time.Second}) {
			t.Errorf("fleet at 20/s, 4 of 5 refused: learned %v, want this process's share, 1/s", got)
		}
	})
}

// Callers admitting concurrently (a backend that lets calls overtake)
// while the server refuses: the learned rule is kept by every admission
// (none slips past the check another passed), every admission is
// recorded, and a refusal is charged to its own call, not another's.
func TestLearnerConcurrentAdmissions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, each = 16, 12
		b := slowBackend{mem(t, throttle.Rule{N: 100, Window: time.Second})}
		l := New(b, []throttle.Rule{{N: 100, Window: time.Second}}, Options{Adopt: true})
		// The server publishes 5/s; the learner adopts it.
		first, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		first.Release()
		l.Observe(first, Outcome{Status: 200, Policy: []throttle.Rule{{N: 5, Window: time.Second}}, PolicyHeader: "RateLimit-Policy"})

		var mu sync.Mutex
		calls := []throttle.Call{{At: first.At, Cost: 1}}
		refused := map[throttle.Admission]bool{first: false} // every admission: whether the server refused it
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					a, err := l.Admit(context.Background(), 1)
					if err != nil {
						t.Error(err)
						return
					}
					time.Sleep(time.Duration(1+w) * time.Millisecond)
					code := 200
					mu.Lock()
					if (w+i)%7 == 0 {
						code = 429
						refused[a] = true
					} else {
						// A refused call is not an arrival: the
						// server did not count it, and the learner
						// stops counting it once it knows.
						calls = append(calls, throttle.Call{At: a.At, Cost: 1})
						refused[a] = false
					}
					mu.Unlock()
					a.Release()
					l.Observe(a, Outcome{Status: code, RetryAfter: time.Second})
				}
			})
		}
		wg.Wait()
		for _, r := range throttle.Check([]throttle.Rule{{N: 5, Window: time.Second}}, calls) {
			if r.Violations > 0 {
				t.Errorf("learned rule 5/s broken %d times over %d accepted concurrent admissions", r.Violations, len(calls))
			}
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.recent) != workers*each+1 {
			t.Errorf("learner recorded %d admissions, want %d", len(l.recent), workers*each+1)
		}
		for a, want := range refused {
			i := l.indexLocked(a)
			if i < 0 {
				t.Errorf("admission at %v not recorded", a.At)
			} else if l.recent[i].refused != want {
				t.Errorf("admission at %v: refused = %v, want %v (a refusal charged to another call)", a.At, l.recent[i].refused, want)
			}
		}
	})
}

// heldBackend records a call, then, before it returns, has the test take
// the learner's lock: Admit then waits for it after the call was
// recorded, as it does when another goroutine holds it on a busy machine.
type heldBackend struct {
	*throttle.Limiter
	recorded, proceed chan struct{}
}

func (b heldBackend) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	a, err := b.Limiter.Admit(ctx, cost)
	recorded := time.Now()
	close(b.recorded)
	<-b.proceed
	a.Latency += time.Since(recorded) // its own wait counts, as the learner's must
	return a, err
}

// The time Admit spends after the backend recorded the call is latency:
// the call leaves no sooner than Admit returns, and a caller measuring its
// lag from At counts Latency and its own clock after the return. (pace
// fetch on a loaded machine: calls admitted at once with Latency 0 left
// up to 16ms later than their lag said, and the margin fell short.) Real
// time: the lock is held for 50ms, and the bound allows half of it.
func TestLearnerLatencyCountsItsOwnWait(t *testing.T) {
	b := heldBackend{mem(t, twentyPerSecond), make(chan struct{}), make(chan struct{})}
	l := New(b, []throttle.Rule{twentyPerSecond}, Options{})
	got := make(chan throttle.Admission)
	go func() {
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Error(err)
		}
		got <- a
	}()
	<-b.recorded
	l.mu.Lock()
	close(b.proceed)
	time.Sleep(50 * time.Millisecond)
	unlocked := time.Now()
	l.mu.Unlock()
	a := <-got
	if left := a.At.Add(a.Latency); left.Before(unlocked.Add(-25 * time.Millisecond)) {
		t.Errorf("Admit returned after %v (the lock it waited for was released then), but At + Latency = %v: Latency %v counts %v too little",
			unlocked.Sub(a.At), left.Sub(a.At), a.Latency, unlocked.Sub(left))
	}
}

// A published policy that would stall a run (a window of 11,574 days, or
// one far slower than the caller's rules) is not adopted, and the learner
// says why; a plausible one is.
func TestLearnerRefusesImplausiblePolicy(t *testing.T) {
	var hints []string
	l := New(mem(t), []throttle.Rule{{N: 10, Window: time.Second}}, Options{Adopt: true, Hint: func(s string) { hints = append(hints, s) }})
	a, err := l.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	huge := throttle.Rule{N: 1, Window: 1e9 * time.Second}
	l.Observe(a, Outcome{Status: 200, Policy: []throttle.Rule{huge}, PolicyHeader: "RateLimit-Policy"})
	if got := l.Rules(); len(got) != 0 {
		t.Errorf("adopted %v from a policy with a window of %v", got, huge.Window)
	}
	slow := throttle.Rule{N: 1, Window: 24 * time.Hour}
	l.Observe(a, Outcome{Status: 200, Policy: []throttle.Rule{slow}, PolicyHeader: "RateLimit-Policy"})
	if got := l.Rules(); len(got) != 0 {
		t.Errorf("adopted %v, more than %d times slower than 10/s", got, MaxPolicySlowdown)
	}
	if len(hints) != 2 || !strings.Contains(hints[0], "ignores") || !strings.Contains(hints[1], "slower") {
		t.Errorf("hints = %q, want two saying the policy is ignored and why", hints)
	}
	ok := throttle.Rule{N: 100, Window: time.Minute}
	l.Observe(a, Outcome{Status: 200, Policy: []throttle.Rule{ok}, PolicyHeader: "RateLimit-Policy"})
	if got := l.Rules(); len(got) != 1 || got[0] != ok {
		t.Errorf("rules = %v, want the plausible policy %v adopted", got, ok)
	}
}

// A published rule that is not a rule at all (N below 1 or above
// throttle.MaxLimit, a window of 0 or less), which a caller of Observe
// may pass on from a server's headers, is not adopted: 0 per 0s held
// every later admission until its context ended, MaxWait or not, and
// without rules of the caller's nothing else was ignored either.
func TestLearnerIgnoresInvalidPolicy(t *testing.T) {
	for _, user := range [][]throttle.Rule{nil, {{N: 10, Window: time.Second}}} {
		for _, bad := range []throttle.Rule{{N: 0, Window: 0}, {N: -5, Window: time.Second},
			{N: 5, Window: -time.Second}, {N: throttle.MaxLimit + 1, Window: time.Second}} {
			t.Run(fmt.Sprintf("user%d,N=%d,W=%v", len(user), bad.N, bad.Window), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var hints []string
					l := New(mem(t, user...), user, Options{Adopt: true, MaxWait: time.Second, Hint: func(s string) { hints = append(hints, s) }})
					a, err := l.Admit(context.Background(), 1)
					if err != nil {
						t.Fatal(err)
					}
					l.Observe(a, Outcome{Status: 200, Policy: []throttle.Rule{bad}, PolicyHeader: "RateLimit-Policy"})
					if got := l.Rules(); len(got) != 0 {
						t.Errorf("user rules %v: adopted %v from the published %v", user, got, bad)
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					start := time.Now()
					if _, err := l.Admit(ctx, 1); err != nil || time.Since(start) != 0 {
						t.Errorf("user rules %v, published %v: Admit = %v after %v, want at once", user, bad, err, time.Since(start))
					}
					if len(hints) != 1 || !strings.Contains(hints[0], "ignores") {
						t.Errorf("hints = %q, want one saying %v is ignored", hints, bad)
					}
				})
			})
		}
	}
}

// A server that publishes another absurd rule with every answer is
// hinted at once for each reason the rules are ignored, not once per
// rule: pace fetch put a line on stderr for every response.
func TestLearnerImplausiblePolicyHintedOnce(t *testing.T) {
	for _, adopt := range []bool{false, true} {
		var hints []string
		l := New(mem(t), []throttle.Rule{{N: 10, Window: time.Second}}, Options{Adopt: adopt, Hint: func(s string) { hints = append(hints, s) }})
		for i := range 20 {
			a, err := l.Admit(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			a.Release()
			long := throttle.Rule{N: 100 + i, Window: MaxPolicyWindow + time.Hour}
			slow := throttle.Rule{N: 1 + i%2, Window: 24*time.Hour + time.Duration(i)*time.Second}
			l.Observe(a, Outcome{Status: 200, Policy: []throttle.Rule{slow, long}, PolicyHeader: "RateLimit-Policy"})
		}
		if len(hints) != 2 {
			t.Errorf("adopt %v: hints = %q, want two, one for each reason", adopt, hints)
		}
	}
}

// Without Adopt a published policy is only hinted at, once.
func TestLearnerHintsPolicyOnce(t *testing.T) {
	var hints []string
	l := New(mem(t), nil, Options{Hint: func(s string) { hints = append(hints, s) }})
	for i := range 3 {
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
		l.Observe(a, Outcome{Status: 200, Policy: []throttle.Rule{{N: 10 + i%2, Window: time.Second}}, PolicyHeader: "RateLimit-Policy"})
	}
	if len(hints) != 1 || !strings.Contains(hints[0], "--rules-from-server") {
		t.Errorf("hints = %q, want one naming --rules-from-server", hints)
	}
	if got := l.Rules(); len(got) != 0 {
		t.Errorf("rules = %v without Adopt, want none", got)
	}
}

// A caller that gives up while waiting on a learned rule gets its
// context's error and leaves no reservation behind.
func TestLearnerCancelledWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(mem(t), nil, Options{Adopt: true})
		a, _ := l.Admit(context.Background(), 1)
		a.Release()
		l.Observe(a, Outcome{Status: 200, Policy: []throttle.Rule{{N: 1, Window: time.Minute}}, PolicyHeader: "RateLimit-Policy"})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := l.Admit(ctx, 1); err != context.DeadlineExceeded {
			t.Fatalf("Admit under a spent learned rule = %v, want DeadlineExceeded", err)
		}
		if l.reserved != 0 {
			t.Errorf("reserved = %d after a cancelled wait, want 0", l.reserved)
		}
		time.Sleep(time.Minute)
		if _, err := l.Admit(context.Background(), 1); err != nil {
			t.Errorf("Admit a window later = %v, want nil", err)
		}
	})
}

// A cost that can never be admitted fails at once, as the backend's
// Admit fails it: it waited on the learned rules first (a minute under a
// published 1/m), holding every caller behind it, only to be refused.
func TestLearnerBadCostFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rules := []throttle.Rule{{N: 100, Window: time.Second}, {N: 10, Window: time.Second, Cost: true}}
		b, err := throttle.New(throttle.Options{Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		l := New(b, rules, Options{Adopt: true})
		a, _ := l.Admit(context.Background(), 1)
		a.Release()
		l.Observe(a, Outcome{Status: 200, Policy: []throttle.Rule{{N: 1, Window: time.Minute}}, PolicyHeader: "RateLimit-Policy"})
		for _, cost := range []int{0, -1, 11} {
			start := time.Now()
			if _, err := l.Admit(context.Background(), cost); !errors.Is(err, throttle.ErrBadCost) || time.Since(start) != 0 {
				t.Errorf("Admit(%d) = %v after %v, want ErrBadCost at once", cost, err, time.Since(start))
			}
		}
	})
}

// Close wakes an admission waiting on a learned rule with ErrClosed (it
// waited the rule out before), and a later one fails at once.
func TestLearnerCloseWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(mem(t), nil, Options{Adopt: true})
		a, _ := l.Admit(context.Background(), 1)
		a.Release()
		l.Observe(a, Outcome{Status: 200, Policy: []throttle.Rule{{N: 1, Window: time.Hour}}, PolicyHeader: "RateLimit-Policy"})
		errs := make(chan error, 1)
		go func() {
			_, err := l.Admit(context.Background(), 1)
			errs <- err
		}()
		synctest.Wait()
		start := time.Now()
		l.Close()
		if err := <-errs; !errors.Is(err, throttle.ErrClosed) || time.Since(start) != 0 {
			t.Errorf("a waiter got %v after %v, want ErrClosed at once", err, time.Since(start))
		}
		if _, err := l.Admit(context.Background(), 1); !errors.Is(err, throttle.ErrClosed) {
			t.Errorf("Admit after Close = %v, want ErrClosed", err)
		}
	})
}

// A published rule that would hold a call longer than MaxWait fails the
// admission at once, saying which rule and for how long, and records
// nothing; a wait within MaxWait is waited, and a wait on the rule
// inferred from refusals is not bounded.
func TestLearnerPolicyWaitTooLong(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(mem(t), nil, Options{Adopt: true, MaxWait: 10 * time.Second})
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
		month := throttle.Rule{N: 1, Window: 30 * 24 * time.Hour}
		l.Observe(a, Outcome{Status: 200, Policy: []throttle.Rule{month}, PolicyHeader: "RateLimit-Policy: 1;w=2592000"})
		start := time.Now()
		_, err = l.Admit(context.Background(), 1)
		var long *PolicyWaitTooLong
		if !errors.As(err, &long) {
			t.Fatalf("Admit under 1 call a month = %v, want a *PolicyWaitTooLong", err)
		}
		if long.Rule != month || long.Max != 10*time.Second || long.Wait < 29*24*time.Hour || long.Header != "RateLimit-Policy: 1;w=2592000" {
			t.Errorf("error = %+v, want the rule %v, its header, a wait of about 30 days and the bound 10s", *long, month)
		}
		if !strings.Contains(err.Error(), month.String()) {
			t.Errorf("message %q does not name the rule", err)
		}
		if time.Since(start) != 0 || l.reserved != 0 {
			t.Errorf("waited %v, %d reserved: want an answer at once and nothing held", time.Since(start), l.reserved)
		}
		// A published rule within the bound is waited out.
		l.Observe(a, Outcome{Status: 200, Policy: []throttle.Rule{{N: 1, Window: 5 * time.Second}}, PolicyHeader: "RateLimit-Policy: 1;w=5"})
		if _, err := l.Admit(context.Background(), 1); err != nil {
			t.Fatalf("Admit under 1/5s = %v, want it admitted after a wait", err)
		}
		if w := time.Since(start); w < 5*time.Second {
			t.Errorf("admitted after %v under 1/5s, want 5s", w)
		}
	})
}

// BenchmarkAdmitPastMaxRecent admits through a learner that remembers
// as many calls as it may (maxRecent): what a long-lived proxy does at
// every request. Forgetting the oldest used to scan them at each call.
func BenchmarkAdmitPastMaxRecent(b *testing.B) {
	lim, err := throttle.New(throttle.Options{})
	if err != nil {
		b.Fatal(err)
	}
	l := New(lim, nil, Options{})
	ctx := context.Background()
	for range maxRecent + maxRecent/4 {
		a, _ := l.Admit(ctx, 1)
		a.Release()
	}
	b.ReportAllocs()
	for b.Loop() {
		a, err := l.Admit(ctx, 1)
		if err != nil {
			b.Fatal(err)
		}
		a.Release()
	}
}

// TestRecentGrowsByDoubling records more calls than the learner keeps: its
// history is reallocated a few times (doubling), never past the most it
// holds, and keeps the latest maxRecent calls in order.
func TestRecentGrowsByDoubling(t *testing.T) {
	l := New(mem(t), nil, Options{})
	t0 := instant(time.Unix(1_000_000, 0))
	grows, last := 0, -1
	for k := range 3 * recentCap {
		l.insertLocked(call{at: t0 + int64(k)*int64(time.Millisecond)})
		if c := cap(l.recent); c != last {
			grows++
			last = c
		}
		if cap(l.recent) > recentCap {
			t.Fatalf("after %d calls cap(recent) = %d, want at most %d", k+1, cap(l.recent), recentCap)
		}
	}
	if grows > 12 {
		t.Errorf("the history was reallocated %d times, want at most 12 (doubling)", grows)
	}
	if len(l.recent) < maxRecent {
		t.Errorf("len(recent) = %d, want at least %d", len(l.recent), maxRecent)
	}
	for i := 1; i < len(l.recent); i++ {
		if l.recent[i].at < l.recent[i-1].at {
			t.Fatalf("recent[%d] before recent[%d]", i, i-1)
		}
	}
	if got, want := l.recent[len(l.recent)-1].at, t0+int64(3*recentCap-1)*int64(time.Millisecond); got != want {
		t.Errorf("latest call at %v, want %v", got, want)
	}
}

// BenchmarkAdmitFromFresh admits maxRecent+maxRecent/2 calls through a
// fresh learner, as a proxy does in its first hundred thousand requests,
// while the history grows to the most it holds.
func BenchmarkAdmitFromFresh(b *testing.B) {
	lim, err := throttle.New(throttle.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l := New(lim, nil, Options{})
		for range maxRecent + maxRecent/2 {
			a, err := l.Admit(ctx, 1)
			if err != nil {
				b.Fatal(err)
			}
			a.Release()
		}
	}
}

// serve admits calls through l, one after another, for d, each answered
// by a server that accepts at most limit calls in any second and refuses
// the rest with 429 and Retry-After: 1. It returns how many were refused.
func serve(t *testing.T, l *Backend, limit int, d time.Duration) (refused int) {
	t.Helper()
	var accepted []time.Time
	for end := time.Now().Add(d); time.Now().Before(end); {
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
		now, in := time.Now(), 0
		for _, at := range accepted {
			if at.After(now.Add(-time.Second)) {
				in++
			}
		}
		o := Outcome{Status: 200}
		if in >= limit {
			o = Outcome{Status: 429, RetryAfter: time.Second}
			refused++
		} else {
			accepted = append(accepted, now)
		}
		l.Observe(a, o)
	}
	return refused
}

// After ten quiet windows the learner raises its rule by one: a probe,
// which a server that keeps its limit refuses. Each refused probe doubles
// the quiet stretch before the next; and a caller with too few calls left
// to repay a refused probe is not probed for at all.
func TestLearnerProbes(t *testing.T) {
	for _, c := range []struct {
		name      string
		remaining func() int64
		probes    int // refused in 75s after the rule is learned
	}{
		// Raised at 10s and refused, then at 10+20s, then at 30+40s.
		{"remaining unknown", nil, 3},
		{"input still being read", func() int64 { return -1 }, 3},
		// 5/s to 6/s repays a refused probe (a 1s pause) over 30 calls
		// or more: 5·6·1s ≤ R·1s.
		{"30 left", func() int64 { return 30 }, 3},
		{"29 left", func() int64 { return 29 }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := New(mem(t, twentyPerSecond), []throttle.Rule{twentyPerSecond}, Options{Remaining: c.remaining})
				serve(t, l, 5, time.Second)
				want := []throttle.Rule{{N: 5, Window: time.Second}}
				if got := l.Rules(); !slices.Equal(got, want) {
					t.Fatalf("learned %v after a second, want %v", got, want)
				}
				if got := serve(t, l, 5, 75*time.Second); got != c.probes {
					t.Errorf("%d calls refused in the next 75s, want %d (probes)", got, c.probes)
				}
				if got := l.Rules(); !slices.Equal(got, want) {
					t.Errorf("learned %v at the end, want %v", got, want)
				}
			})
		})
	}
}

// The learned rules' windows are widened by the margin: the backend's at
// New, then what SetMargin says, bounded by a century (a margin
// near the largest Duration once wrapped the windows around, and a call
// under a learned rule went at once).
func TestLearnerMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := throttle.New(throttle.Options{Margin: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		l := New(lim, nil, Options{Adopt: true, MaxWait: time.Hour})
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
		l.Observe(a, Outcome{Status: 200, Policy: []throttle.Rule{{N: 1, Window: 5 * time.Second}}, PolicyHeader: "RateLimit-Policy: 1;w=5"})
		start := time.Now()
		if a, err = l.Admit(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		a.Release()
		if w := time.Since(start); w != 6*time.Second {
			t.Errorf("admitted after %v under 1/5s with the backend's margin of 1s, want 6s", w)
		}
		l.SetMargin(math.MaxInt64)
		_, err = l.Admit(context.Background(), 1)
		var long *PolicyWaitTooLong
		if !errors.As(err, &long) || long.Wait < 99*365*24*time.Hour {
			t.Fatalf("Admit under 1/5s with a margin of MaxInt64 = %v, want a *PolicyWaitTooLong of about a century", err)
		}
	})
}
