package redisrate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

var _ throttle.Backend = (*redisrate.Limiter)(nil)

func TestKeysAndArguments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.missing[redisrate.AdmitSHA] = true
		l := openFake(t, f, "500/m,10/s,200000/h,cost:1000/s", redisrate.Options{Margin: 5 * time.Millisecond})

		// Redis order: by window, count before cost, then by N.
		wantKeys := []string{
			"pace:{api}:rules",
			"pace:{api}:r0:10/s", "pace:{api}:r0:10/s:sum",
			"pace:{api}:r1:cost:1000/s", "pace:{api}:r1:cost:1000/s:sum",
			"pace:{api}:r2:500/m", "pace:{api}:r2:500/m:sum",
			"pace:{api}:r3:200000/h:counter", "pace:{api}:r3:200000/h:counter:sum",
			"pace:{api}:margins",
			"pace:{api}:slots",
		}
		if got := l.Keys(); !slices.Equal(got, wantKeys) {
			t.Fatalf("Keys() = %q, want %q", got, wantKeys)
		}
		a, err := l.Admit(context.Background(), 7)
		if err != nil {
			t.Fatalf("Admit(ctx, 7) = %v", err)
		}
		calls := f.Calls()
		if len(calls) != 2 || calls[0].eval || !calls[1].eval {
			t.Fatalf("calls = %+v, want EVALSHA answered NOSCRIPT, then EVAL", calls)
		}
		if calls[0].sha != redisrate.AdmitSHA {
			t.Errorf("EVALSHA digest %s, want %s", calls[0].sha, redisrate.AdmitSHA)
		}
		member, _ := calls[0].args[1].(string)
		if member == "" {
			t.Fatalf("member %v, want a non-empty string", calls[0].args[1])
		}
		// The rules key lives as long as the longest window, margin
		// excluded (the script adds the fleet's): the counter's 1h plus
		// one bucket, in ms, plus 2. The 5ms margin stays in force that
		// long after the call, plus itself. Windows go without margin.
		process, _ := calls[0].args[6].(string)
		if process == "" || !strings.HasPrefix(member, process+".") {
			t.Fatalf("process id %v, want the prefix of member %q", calls[0].args[6], member)
		}
		want := []any{"10/s,cost:1000/s,500/m,200000/h", member, time.Now().UnixMicro(), int64(3603517),
			int64(5000), int64(3603515625 + 5000), process, int64(0), "",
			10, int64(1000000), "0", 1,
			1000, int64(1000000), "2", 7,
			500, int64(60000000), "0", 1,
			200000, int64(3600000000), "1", 1}
		for i, c := range calls {
			if want := append(slices.Clone(wantKeys[:10]), "pace:{api}:reset"); !slices.Equal(c.keys, want) {
				t.Errorf("call %d: keys = %q, want %q", i, c.keys, want)
			}
			if fmt.Sprintf("%#v", c.args) != fmt.Sprintf("%#v", want) {
				t.Errorf("call %d: args = %v, want %v", i, c.args, want)
			}
		}
		if !a.At.Equal(time.Now()) || a.Cost != 7 || a.Waited != 0 {
			t.Errorf("Admit(ctx, 7) = {At %v, Cost %d, Waited %v}, want {now %v, 7, 0}", a.At, a.Cost, a.Waited, time.Now())
		}

		if _, err := l.Admit(context.Background(), 1); err != nil {
			t.Fatalf("Admit(ctx, 1) = %v", err)
		}
		calls = f.Calls()
		if len(calls) != 3 || calls[2].eval {
			t.Fatalf("second admission: %d calls (last eval=%v), want one more EVALSHA", len(calls), calls[len(calls)-1].eval)
		}
		if calls[2].args[1] == member {
			t.Errorf("two admissions share member %v", member)
		}
		if got := calls[2].ruleArgs()[1][3]; got != 1 {
			t.Errorf("Admit(ctx, 1): weight %v for cost:1000/s, want 1", got)
		}
		if s := l.Stats().Store; s.Name != "redis" || s.RoundTrips != 3 || s.Failures != 0 {
			t.Errorf("Stats().Store = %+v, want redis, 3 round trips, no failure", s)
		}
		if got := redisrate.ScriptLoads(l); got != 1 {
			t.Errorf("ScriptLoads = %d, want 1", got)
		}

		// SetMargin applies from the next call on; Seed does nothing.
		l.SetMargin(0)
		if err := l.Seed([]throttle.Call{{At: time.Now(), Cost: 1}}); err != nil {
			t.Errorf("Seed = %v, want nil", err)
		}
		if _, err := l.Admit(context.Background(), 1); err != nil {
			t.Fatalf("Admit = %v", err)
		}
		calls = f.Calls()
		last := calls[len(calls)-1]
		if len(calls) != 4 || last.args[4] != int64(0) || last.ruleArgs()[0][1] != int64(1000000) {
			t.Errorf("after SetMargin(0): %d calls, margin %v, 10/s window %v; want 4, 0, 1000000",
				len(calls), last.args[4], last.ruleArgs()[0][1])
		}
		if m := l.Stats().Margin; m != 0 {
			t.Errorf("Stats().Margin = %v after SetMargin(0), want 0", m)
		}
	})
}

func TestSpec(t *testing.T) {
	tests := []struct {
		rules string
		o     redisrate.Options
		want  string
	}{
		{"10/s", redisrate.Options{}, "10/s"},
		// Order does not matter: rules are stored sorted by window.
		{"500/m,10/s", redisrate.Options{}, "10/s,500/m"},
		{"10/s,500/m", redisrate.Options{}, "10/s,500/m"},
		{"20/s,10/s", redisrate.Options{}, "10/s,20/s"},
		// In one window, count rules come before cost rules.
		{"cost:100/s,10/s", redisrate.Options{}, "10/s,cost:100/s"},
		{"cost:100/s,cost:50/s,5/m", redisrate.Options{}, "cost:50/s,cost:100/s,5/m"},
		{"cost:1000/m,5/s", redisrate.Options{}, "5/s,cost:1000/m"},
		{"10/s", redisrate.Options{GlobalJobs: 4}, "10/s global-jobs=4"},
		// A counter threshold matters only if it changes some rule's form.
		{"10/s", redisrate.Options{CounterAbove: 1000}, "10/s"},
		{"10/s", redisrate.Options{CounterAbove: -1}, "10/s counter-above=0"},
		{"200000/h", redisrate.Options{CounterAbove: 300000}, "200000/h counter-above=300000"},
		{"cost:10/s", redisrate.Options{CounterAbove: -1, GlobalJobs: 2}, "cost:10/s counter-above=0 global-jobs=2"},
		{"", redisrate.Options{GlobalJobs: 2}, "global-jobs=2"},
		{"", redisrate.Options{}, ""},
	}
	for _, tt := range tests {
		l := openFake(t, newFake(), tt.rules, tt.o)
		if got := l.Spec(); got != tt.want {
			t.Errorf("Open(%q, %+v).Spec() = %q, want %q", tt.rules, tt.o, got, tt.want)
		}
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	one := []throttle.Rule{{N: 1, Window: time.Second}}
	for _, tt := range []struct {
		name    string
		client  redisrate.Client
		o       redisrate.Options
		badRule bool // the error is a *throttle.RuleError
	}{
		{"nil client", nil, redisrate.Options{Rules: one}, false},
		{"key with {", newFake(), redisrate.Options{Key: "a{b", Rules: one}, false},
		{"key with }", newFake(), redisrate.Options{Key: "a}b", Rules: one}, false},
		{"rule 0/s", newFake(), redisrate.Options{Rules: []throttle.Rule{{N: 0, Window: time.Second}}}, true},
		{"rule 1/0s", newFake(), redisrate.Options{Rules: []throttle.Rule{{N: 1}}}, true},
		{"negative lease", newFake(), redisrate.Options{Rules: one, GlobalJobs: 1, Lease: -time.Second}, false},
	} {
		l, err := redisrate.Open(ctx, tt.client, tt.o)
		if err == nil || tt.badRule && !errors.As(err, new(*throttle.RuleError)) {
			t.Errorf("Open(%s) = %v, %v; want an error (a *throttle.RuleError: %v)", tt.name, l, err, tt.badRule)
		}
	}

	// An empty key is the default quota.
	l, err := redisrate.Open(ctx, newFake(), redisrate.Options{Rules: one})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := l.Keys()[0]; got != "pace:{"+redisrate.DefaultKey+"}:rules" {
		t.Errorf("Open without a key: Keys()[0] = %s, want the quota %q", got, redisrate.DefaultKey)
	}
	if got := l.Rules(); !slices.Equal(got, one) {
		t.Errorf("Rules() = %v, want %v", got, one)
	}
}

// A lease of a few milliseconds ran out between its holder's renewals, so
// that another process took the slot while the call still ran: a lease
// shorter than MinLease is taken as MinLease.
func TestShortLeaseIsMinLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		l := openFake(t, f, "", redisrate.Options{GlobalJobs: 1, Lease: time.Millisecond})
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
		for _, c := range f.Calls() {
			if c.op() == "take" {
				if us := c.args[3].(int64); us != redisrate.MinLease.Microseconds() {
					t.Errorf("a slot taken with a lease of %dµs, want MinLease (%v)", us, redisrate.MinLease)
				}
				return
			}
		}
		t.Error("no slot was taken")
	})
}

func TestOpenChecksStoredRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		rules, _ := throttle.ParseRules("500/m,10/s")
		o := redisrate.Options{Key: "api", Rules: rules}

		// The same rules, in Redis order: fine.
		f := newFake()
		f.stored = "10/s,500/m"
		if l, err := redisrate.Open(ctx, f, o); err != nil {
			t.Errorf("Open with the stored rules = %v", err)
		} else {
			l.Close()
		}

		// Other rules: refused before any admission.
		f = newFake()
		f.stored = "20/s,500/m"
		_, err := redisrate.Open(ctx, f, o)
		if !errors.As(err, new(*throttle.MismatchError)) {
			t.Fatalf("Open with other rules stored = %v, want a *throttle.MismatchError", err)
		}
		for _, want := range []string{`"20/s,500/m"`, `"10/s,500/m"`, `"api"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
		if f.gets != 1 || len(f.Calls()) != 0 {
			t.Errorf("%d GETs and %d script calls, want 1 GET only", f.gets, len(f.Calls()))
		}

		// GET is retried while Redis does not answer.
		f = newFake()
		f.getErr = func(n int) error {
			if n <= 2 {
				return errConnRefused
			}
			return nil
		}
		start := time.Now()
		if l, err := redisrate.Open(ctx, f, o); err != nil {
			t.Errorf("Open while Redis comes back = %v", err)
		} else {
			l.Close()
		}
		if d := time.Since(start); f.gets != 3 || d < redisrate.MinBackoff/2 {
			t.Errorf("Open made %d GETs in %v, want 3 after backing off", f.gets, d)
		}

		// An answer that retrying cannot change fails at once.
		f = newFake()
		f.getErr = func(int) error { return redisErr("WRONGPASS invalid username-password pair or user is disabled.") }
		start = time.Now()
		if _, err := redisrate.Open(ctx, f, o); !errors.Is(err, throttle.ErrBackend) || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("Open with a wrong password = %v, want ErrBackend naming WRONGPASS", err)
		}
		if f.gets != 1 || time.Since(start) != 0 {
			t.Errorf("Open made %d GETs in %v, want 1 at once", f.gets, time.Since(start))
		}
	})
}

func TestAdmitFirstTry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle = func(fakeCall) (any, error) { return admitted(3, 40), nil }
		l := openFake(t, f, "100/m,10/s", redisrate.Options{}) // Redis order: 10/s, 100/m
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatalf("Admit = %v", err)
		}
		if !a.At.Equal(time.Now()) || a.Waited != 0 || a.Cost != 1 {
			t.Errorf("Admit = {At %v, Waited %v, Cost %d}, want {now, 0, 1}", a.At, a.Waited, a.Cost)
		}
		s := l.Stats()
		if s.Admitted != 1 || s.Waits != 0 || s.WaitTime != 0 || s.InFlight != 1 || s.PeakInFlight != 1 {
			t.Errorf("Stats() = %+v, want 1 admitted without waiting, 1 in flight", s)
		}
		// Used comes back in the order the rules were given.
		r := s.Rules
		if r[0].Used != 40 || r[1].Used != 3 || r[0].Usage != 0.4 || r[1].Usage != 0.3 ||
			r[0].PeakUsage != 0.4 || r[1].PeakUsage != 0.3 {
			t.Errorf("Stats().Rules = %+v, want 100/m used 40, 10/s used 3", r)
		}
		if b := s.Busiest(); b != 0 {
			t.Errorf("Stats().Busiest() = %d, want 0 (100/m at 40%%)", b)
		}
		if got := s.Store.RoundTrips; got != 1 {
			t.Errorf("Stats().Store.RoundTrips = %d, want 1", got)
		}
		a.Release()
		a.Release() // no effect
		if s := l.Stats(); s.InFlight != 0 {
			t.Errorf("InFlight = %d after Release, want 0", s.InFlight)
		}
	})
}

func TestAdmitSleepsWhatTheScriptSays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle = func(fakeCall) (any, error) {
			if len(f.Calls()) == 1 {
				return refused(150*time.Millisecond, 2, 10, 100), nil // 100/m, the second in Redis order
			}
			return admitted(10, 100), nil
		}
		l := openFake(t, f, "100/m,10/s", redisrate.Options{})
		done := goAdmit(context.Background(), l, 1)
		time.Sleep(149 * time.Millisecond)
		if _, ok := returned(done); ok {
			t.Fatal("Admit returned before the wait was over")
		}
		if got := len(f.Calls()); got != 1 {
			t.Fatalf("%d calls before the wait is over, want 1", got)
		}
		time.Sleep(time.Millisecond)
		r, ok := returned(done)
		if !ok || r.err != nil {
			t.Fatalf("Admit after 150ms = %v (returned %v), want an admission", r.err, ok)
		}
		if r.a.Waited != 150*time.Millisecond {
			t.Errorf("Admission.Waited = %v, want 150ms", r.a.Waited)
		}
		s := l.Stats()
		if s.Admitted != 1 || s.Waits != 1 || s.WaitTime != 150*time.Millisecond {
			t.Errorf("Stats() = %+v, want 1 admitted after waiting 150ms", s)
		}
		if s.Rules[0].Waits != 1 || s.Rules[0].WaitTime != 150*time.Millisecond || s.Rules[1].Waits != 0 {
			t.Errorf("Stats().Rules = %+v, want the wait charged to 100/m", s.Rules)
		}
	})
}

func TestJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := openFake(t, newFake(), "10/s", redisrate.Options{Jitter: 10 * time.Millisecond})
		for _, wait := range []time.Duration{0, time.Microsecond, 100 * time.Millisecond, time.Hour} {
			hi := min(wait/20, 10*time.Millisecond)
			var seen time.Duration
			for range 1000 {
				j := redisrate.Jitter(l, wait)
				if j < 0 || j > hi {
					t.Fatalf("jitter(%v) = %v, want within [0, %v]", wait, j, hi)
				}
				seen = max(seen, j)
			}
			if hi >= time.Millisecond && seen < hi/2 {
				t.Errorf("jitter(%v) never above %v in 1000 draws, want up to %v", wait, seen, hi)
			}
		}
		if j := redisrate.Jitter(openFake(t, newFake(), "10/s", redisrate.Options{Jitter: -1}), time.Hour); j != 0 {
			t.Errorf("jitter with Jitter: -1 = %v, want 0", j)
		}
		// Jitter 0 is the default.
		def, err := redisrate.Open(context.Background(), newFake(), redisrate.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer def.Close()
		var seen time.Duration
		for range 1000 {
			seen = max(seen, redisrate.Jitter(def, time.Hour))
		}
		if seen > redisrate.DefaultJitter || seen < redisrate.DefaultJitter/2 {
			t.Errorf("default jitter reached %v in 1000 draws, want up to %v", seen, redisrate.DefaultJitter)
		}

		// The sleep a refused call makes is the script's wait plus jitter.
		f := newFake()
		f.handle = func(c fakeCall) (any, error) {
			if len(f.Calls())%2 == 1 {
				return refused(time.Second, 1, 10), nil
			}
			return admitted(10), nil
		}
		l = openFake(t, f, "10/s", redisrate.Options{Jitter: 10 * time.Millisecond})
		var longest time.Duration
		for range 20 {
			a, err := l.Admit(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if a.Waited < time.Second || a.Waited > time.Second+10*time.Millisecond {
				t.Fatalf("Waited %v, want 1s plus at most 10ms of jitter", a.Waited)
			}
			longest = max(longest, a.Waited)
		}
		if longest == time.Second {
			t.Error("20 waits of 1s with no jitter, want some")
		}
	})
}

func TestNoScriptWordings(t *testing.T) {
	for _, noscript := range []error{
		redis.ErrNoScript,
		redisErr("NOSCRIPT No matching script. Please use EVAL."),
		redisErr("ERR NOSCRIPT No matching script"),
		redisErr("ERR proxy: upstream said NOSCRIPT, please use EVAL"),
		errors.New("proxy: upstream said NOSCRIPT, please use EVAL"),
	} {
		synctest.Test(t, func(t *testing.T) {
			f := newFake()
			f.missing[redisrate.AdmitSHA] = true
			f.noscript = noscript
			l := openFake(t, f, "10/s", redisrate.Options{})
			if _, err := l.Admit(context.Background(), 1); err != nil {
				t.Fatalf("NOSCRIPT as %q: Admit = %v", noscript, err)
			}
			s := l.Stats().Store
			if loads := redisrate.ScriptLoads(l); s.RoundTrips != 2 || loads != 1 || s.Failures != 0 {
				t.Errorf("NOSCRIPT as %q: Stats().Store = %+v, %d script loads; want 2 round trips, 1 load, no failure",
					noscript, s, loads)
			}
			if _, err := l.Admit(context.Background(), 1); err != nil {
				t.Fatalf("NOSCRIPT as %q: second Admit = %v", noscript, err)
			}
			if got := l.Stats().Store.RoundTrips; got != 3 {
				t.Errorf("NOSCRIPT as %q: %d round trips after the script was loaded, want 3", noscript, got)
			}
		})
	}
}

func TestRuleMismatchFromAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Nothing was stored when Open checked; another process with other
		// rules slipped in before the first admission.
		f := newFake()
		f.handle = func(fakeCall) (any, error) { return []any{int64(-1), "20/s,500/m"}, nil }
		l := openFake(t, f, "10/s", redisrate.Options{})
		_, err := l.Admit(context.Background(), 1)
		if !errors.As(err, new(*throttle.MismatchError)) {
			t.Fatalf("Admit = %v, want a *throttle.MismatchError", err)
		}
		for _, want := range []string{`"20/s,500/m"`, `"10/s"`, `"api"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
		if s := l.Stats(); s.Admitted != 0 || s.InFlight != 0 || len(f.Calls()) != 1 {
			t.Errorf("Stats() = %+v after %d calls, want nothing admitted after one call", s, len(f.Calls()))
		}
	})
}

func TestMalformedReply(t *testing.T) {
	for _, reply := range []any{
		"OK",
		int64(1),
		[]any{},
		[]any{int64(1)},
		[]any{"1", int64(2), int64(1), int64(0), int64(1)},                          // code not an integer
		[]any{int64(1), int64(2), int64(1), int64(0)},                               // no used count
		[]any{int64(1), int64(2), int64(1), int64(0), int64(1), int64(1)},           // one used count too many
		[]any{int64(1), int64(2), int64(1), int64(0), "x"},                          // used not an integer
		[]any{int64(1), int64(2), int64(1), "0", int64(1)},                          // margin not an integer
		[]any{int64(0), int64(2), int64(1), int64(0), int64(5), int64(9), int64(1)}, // no rule 9
		[]any{int64(0), int64(2), int64(1), int64(0), int64(5), int64(0), int64(1)}, // no rule 0
		[]any{int64(0), int64(2), int64(1), int64(0), int64(5), int64(1)},           // no used count
		[]any{int64(-1), int64(3)},                                                  // spec not a string
	} {
		synctest.Test(t, func(t *testing.T) {
			f := newFake()
			f.handle = func(fakeCall) (any, error) { return reply, nil }
			l := openFake(t, f, "10/s", redisrate.Options{})
			start := time.Now()
			if _, err := l.Admit(context.Background(), 1); !errors.Is(err, throttle.ErrBackend) {
				t.Errorf("reply %#v: Admit = %v, want ErrBackend", reply, err)
			}
			if n, d := len(f.Calls()), time.Since(start); n != 1 || d != 0 {
				t.Errorf("reply %#v: %d calls in %v, want one, no retry", reply, n, d)
			}
			if s := l.Stats(); s.Admitted != 0 || s.InFlight != 0 {
				t.Errorf("reply %#v: Stats() = %+v, want nothing admitted", reply, s)
			}
		})
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle = func(fakeCall) (any, error) { return refused(time.Hour, 1, 10), nil }
		l := openFake(t, f, "10/s", redisrate.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		done := goAdmit(ctx, l, 1)
		if _, ok := returned(done); ok {
			t.Fatal("Admit returned, want it to wait an hour")
		}
		cancel()
		if r, ok := returned(done); !ok || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("Admit after cancel = %v (returned %v), want context.Canceled at once", r.err, ok)
		}
		if n, s := len(f.Calls()), l.Stats(); n != 1 || s.Admitted != 0 || s.InFlight != 0 {
			t.Errorf("%d calls, %d admitted after cancel; want 1 call, 0 admitted", n, s.Admitted)
		}

		// A deadline ends the wait at its instant.
		start := time.Now()
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := l.Admit(ctx, 1); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Errorf("Admit with a 5s deadline = %v after %v, want DeadlineExceeded after 5s", err, time.Since(start))
		}
		// A context already done costs no call.
		n := len(f.Calls())
		if _, err := l.Admit(ctx, 1); !errors.Is(err, context.DeadlineExceeded) || len(f.Calls()) != n {
			t.Errorf("Admit with a done context = %v after %d calls, want DeadlineExceeded and none", err, len(f.Calls())-n)
		}
	})
}

type whoKey struct{}

func who(ctx context.Context) string { s, _ := ctx.Value(whoKey{}).(string); return s }

func as(name string) context.Context { return context.WithValue(context.Background(), whoKey{}, name) }

// gate makes f answer admissions only when the test says so, telling the
// test who asked.
type gate struct {
	asked  chan string
	answer chan []any
}

func gated(f *fakeRedis) *gate {
	g := &gate{asked: make(chan string), answer: make(chan []any)}
	f.handle = func(c fakeCall) (any, error) {
		g.asked <- who(c.ctx)
		return <-g.answer, nil
	}
	return g
}

// next answers the call under way with reply and returns who asks next.
func (g *gate) next(reply []any) string {
	g.answer <- reply
	return <-g.asked
}

// Callers that queue while an attempt is under way are asked for in one
// attempt, in order; those the script refuses stay at the head, in order,
// and are asked for again after the wait.
func TestAdmissionIsFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		g := gated(f)
		l := openFake(t, f, "10/s", redisrate.Options{})
		done := map[string]<-chan admitResult{}
		done["a"] = goAdmit(as("a"), l, 1)
		if got := <-g.asked; got != "a" {
			t.Fatalf("first to ask Redis: %s, want a", got)
		}
		for i, name := range []string{"b", "c", "d"} {
			done[name] = goAdmit(as(name), l, 1)
			synctest.Wait()
			if q := redisrate.Queued(l); q != i+1 {
				t.Fatalf("%d queued after %s came, want %d", q, name, i+1)
			}
		}
		if got := g.next(admitted(1)); got != "b" {
			t.Fatalf("next to ask Redis: %s, want b for b, c and d", got)
		}
		calls := f.Calls()
		ids, _ := calls[len(calls)-1].batch()
		if len(ids) != 3 || ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] {
			t.Fatalf("members asked for %v, want b, c and d's, each its own", ids)
		}
		// b is admitted; c and d must wait 100ms, then are asked for
		// together again.
		g.answer <- partly(1, 100*time.Millisecond, 1, 10)
		if r := <-done["b"]; r.err != nil || r.a.Waited != 0 {
			t.Fatalf("Admit(b) = %+v, want admitted without a wait", r)
		}
		start := time.Now()
		if got := <-g.asked; got != "c" || time.Since(start) != 100*time.Millisecond {
			t.Fatalf("after b: %s asked after %v, want c after 100ms", got, time.Since(start))
		}
		calls = f.Calls()
		if next, _ := calls[len(calls)-1].batch(); len(next) != 2 || next[0] != ids[1] && next[0] == ids[0] {
			t.Fatalf("members asked for %v, want c and d's", next)
		}
		g.answer <- admitted(10)
		var at []time.Time
		for _, name := range []string{"a", "c", "d"} {
			r := <-done[name]
			if r.err != nil {
				t.Errorf("Admit(%s) = %v", name, r.err)
			}
			at = append(at, r.a.At)
		}
		if !at[1].Equal(at[2]) || !at[1].After(at[0]) {
			t.Errorf("c and d admitted at %v, want one instant, after a's", at)
		}
		s := l.Stats()
		if s.Admitted != 4 || s.Waits != 1 || s.Rules[0].Waits != 1 {
			t.Errorf("Admitted %d, waits %d (rule %d), want 4 admitted, c and d held back once, on the rule", s.Admitted, s.Waits, s.Rules[0].Waits)
		}
	})
}

func TestCancelledWaiterDelaysNobody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		g := gated(f)
		l := openFake(t, f, "10/s", redisrate.Options{})
		a := goAdmit(as("a"), l, 1)
		<-g.asked
		ctxB, cancelB := context.WithCancel(as("b"))
		b := goAdmit(ctxB, l, 1)
		synctest.Wait()
		c := goAdmit(as("c"), l, 1)
		synctest.Wait()
		cancelB()
		if r, ok := returned(b); !ok || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("Admit(b) = %v (returned %v), want context.Canceled at once", r.err, ok)
		}
		if got := g.next(admitted(1)); got != "c" {
			t.Fatalf("after a: %s asked, want c", got)
		}
		calls := f.Calls()
		if ids, _ := calls[len(calls)-1].batch(); len(ids) != 1 {
			t.Fatalf("asked for %d calls, want c's alone", len(ids))
		}
		g.answer <- admitted(2)
		for _, ch := range []<-chan admitResult{a, c} {
			if r := <-ch; r.err != nil {
				t.Errorf("Admit = %v", r.err)
			}
		}
		if got := l.Stats().Admitted; got != 2 {
			t.Errorf("Admitted = %d, want 2", got)
		}

		// The head of the queue gives up while it sleeps on a rule: the next
		// caller asks Redis at once.
		ctxA, cancelA := context.WithCancel(as("a"))
		a = goAdmit(ctxA, l, 1)
		<-g.asked
		g.answer <- refused(time.Hour, 1, 10)
		c = goAdmit(as("c"), l, 1)
		synctest.Wait()
		start := time.Now()
		cancelA()
		if got := <-g.asked; got != "c" || time.Since(start) != 0 {
			t.Fatalf("after a gave up: %s asked after %v, want c at once", got, time.Since(start))
		}
		g.answer <- admitted(3)
		if r := <-a; !errors.Is(r.err, context.Canceled) {
			t.Errorf("Admit(a) = %v, want context.Canceled", r.err)
		}
		if r := <-c; r.err != nil {
			t.Errorf("Admit(c) = %v", r.err)
		}

		// A caller whose call is in the attempt under way gives up: it
		// returns at once; if Redis admits its call, the call is spent
		// (counted nowhere in this process) and the others of the batch
		// go ahead.
		x := goAdmit(as("x"), l, 1)
		<-g.asked
		ctxY, cancelY := context.WithCancel(as("y"))
		y := goAdmit(ctxY, l, 1)
		synctest.Wait()
		z := goAdmit(as("z"), l, 1)
		synctest.Wait()
		if got := g.next(admitted(4)); got != "y" {
			t.Fatalf("after x: %s asked, want y (for y and z)", got)
		}
		cancelY()
		if r, ok := returned(y); !ok || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("Admit(y) = %v (returned %v), want context.Canceled at once", r.err, ok)
		}
		g.answer <- admitted(6)
		for _, ch := range []<-chan admitResult{x, z} {
			if r := <-ch; r.err != nil {
				t.Errorf("Admit = %v", r.err)
			}
		}
		if s := l.Stats(); s.Admitted != 5 || s.InFlight != 5 {
			t.Errorf("Admitted %d, in flight %d, want 5 and 5 (y's call spent, not handed out)", s.Admitted, s.InFlight)
		}
	})
}

func TestPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		l := openFake(t, f, "10/s", redisrate.Options{})
		t0 := time.Now()
		l.PauseUntil(t0.Add(2*time.Second), "429 Retry-After: 2")
		l.PauseUntil(t0.Add(time.Second), "shorter: ignored")
		l.PauseUntil(t0.Add(-time.Second), "past: ignored")
		done := goAdmit(context.Background(), l, 1)
		time.Sleep(2*time.Second - time.Nanosecond)
		if _, ok := returned(done); ok || len(f.Calls()) != 0 {
			t.Fatalf("Admit returned %v after %d calls during the pause, want it to wait without asking Redis", ok, len(f.Calls()))
		}
		time.Sleep(time.Nanosecond)
		r, ok := returned(done)
		if !ok || r.err != nil || r.a.Waited != 2*time.Second {
			t.Fatalf("Admit at the end of the pause = %+v (returned %v), want an admission after 2s", r, ok)
		}
		s := l.Stats()
		if s.Pauses != 1 || s.PauseWaits != 1 || s.PauseWaitTime != 2*time.Second ||
			s.PauseReason != "429 Retry-After: 2" || !s.PausedUntil.Equal(t0.Add(2*time.Second)) {
			t.Errorf("Stats() = %+v, want one pause of 2s with its reason", s)
		}
		if s.Waits != 1 || s.Rules[0].Waits != 0 {
			t.Errorf("Stats() = %+v, want the wait charged to the pause, not the rule", s)
		}
	})
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		l := openFake(t, f, "10/s", redisrate.Options{GlobalJobs: 2})
		held, err := l.Admit(context.Background(), 1) // holds slot 1, never released
		if err != nil {
			t.Fatal(err)
		}
		f.setHandle(func(c fakeCall) (any, error) {
			if c.op() == "admit" {
				return refused(time.Hour, 1, 10), nil
			}
			return f.scriptReply(c), nil
		})
		// b holds slot 2 and sleeps on the rate; c waits for a slot; d
		// queues behind c.
		b := goAdmit(context.Background(), l, 1)
		synctest.Wait()
		c := goAdmit(context.Background(), l, 1)
		synctest.Wait()
		d := goAdmit(context.Background(), l, 1)
		synctest.Wait()
		if f.held() != 2 {
			t.Fatalf("%d slots held, want 2", f.held())
		}
		if err := l.Close(); err != nil {
			t.Fatalf("Close = %v", err)
		}
		for name, ch := range map[string]<-chan admitResult{"b": b, "c": c, "d": d} {
			if r, ok := returned(ch); !ok || !errors.Is(r.err, throttle.ErrClosed) {
				t.Errorf("pending Admit(%s) = %v (returned %v), want ErrClosed", name, r.err, ok)
			}
		}
		if f.held() != 0 {
			t.Errorf("%d slots held after Close, want both given back", f.held())
		}
		n := len(f.Calls())
		if _, err := l.Admit(context.Background(), 1); !errors.Is(err, throttle.ErrClosed) {
			t.Errorf("Admit after Close = %v, want ErrClosed", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("second Close = %v", err)
		}
		held.Release() // already given back by Close
		time.Sleep(time.Hour)
		if got := f.ops()[n:]; len(got) != 0 {
			t.Errorf("calls after Close: %q, want none (no renewal, no second release)", got)
		}
	})
}

func TestNoRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		l := openFake(t, f, "", redisrate.Options{})
		a, err := l.Admit(context.Background(), 1_000_000)
		if err != nil {
			t.Fatalf("Admit = %v", err)
		}
		a.Release()
		if len(f.Calls()) != 0 || l.Stats().Admitted != 1 {
			t.Errorf("Admit without rules made %d calls, admitted %d; want 0 calls, 1 admitted", len(f.Calls()), l.Stats().Admitted)
		}
		// Only the fleet-wide cap then talks to Redis.
		l = openFake(t, f, "", redisrate.Options{GlobalJobs: 1})
		a, err = l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatalf("Admit = %v", err)
		}
		a.Release()
		if got := f.ops(); !slices.Equal(got, []string{"take", "release"}) {
			t.Errorf("ops = %q, want take, release", got)
		}
	})
}
