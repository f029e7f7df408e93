package throttle_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	. "github.com/pace-cli/pace/throttle"
	"golang.org/x/time/rate"
)

// Rules that never block at benchmark speeds, so the benchmarks measure
// the admission path itself: exact logs, and counters.
const (
	exactRules   = "100000/ms,100000/2ms,100000/3ms"
	counterRules = "1000000000/s,10000000000/m,100000000000/d"
)

func benchAdmit(b *testing.B, spec string, cost int, opts Options) {
	rules, err := ParseRules(spec)
	if err != nil {
		b.Fatal(err)
	}
	opts.Rules = rules
	l, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a, err := l.Admit(ctx, cost)
		if err != nil {
			b.Fatal(err)
		}
		a.Release()
	}
}

// BenchmarkAdmit3Rules is uncontended admission under 3 rules: Admit,
// then Release.
func BenchmarkAdmit3Rules(b *testing.B) {
	b.Run("exact", func(b *testing.B) { benchAdmit(b, exactRules, 1, Options{}) })
	b.Run("counter", func(b *testing.B) { benchAdmit(b, counterRules, 1, Options{}) })
	// A cap on calls in flight: the same path, with a slot counted
	// against it.
	b.Run("capped", func(b *testing.B) { benchAdmit(b, exactRules, 1, Options{MaxInFlight: 8}) })
}

// Weighted rules that never block at benchmark speeds: one count rule and
// two cost rules, admitting calls of cost 7.
const weightedRules = "100000/ms,cost:10000000/ms,cost:10000000/2ms"

// BenchmarkXTimeRate3 is the same admission with golang.org/x/time/rate:
// three token buckets, one per rule, waited on one after the other.
func BenchmarkXTimeRate3(b *testing.B) {
	ls := []*rate.Limiter{
		rate.NewLimiter(rate.Limit(1e8), 100000),
		rate.NewLimiter(rate.Limit(5e7), 100000),
		rate.NewLimiter(rate.Limit(3e7), 100000),
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range ls {
			if err := l.Wait(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkAdmitContended has 8 goroutines admitting through one limiter
// under 3 rules, each admission released at once.
func BenchmarkAdmitContended(b *testing.B) {
	rules, _ := ParseRules(exactRules)
	l, _ := New(Options{Rules: rules})
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a, err := l.Admit(ctx, 1)
			if err != nil {
				b.Error(err)
				return
			}
			a.Release()
		}
	})
}

// BenchmarkXTimeRateContended is BenchmarkAdmitContended for one
// x/time/rate limiter (one rule, and nothing to release).
func BenchmarkXTimeRateContended(b *testing.B) {
	l := rate.NewLimiter(rate.Limit(1e8), 100000)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := l.Wait(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRuleMemory reports the heap one full rule holds: N calls
// admitted over one window.
func BenchmarkRuleMemory(b *testing.B) {
	for _, c := range []struct {
		name string
		rule Rule
	}{
		{"exact-10000-per-day", Rule{N: 10000, Window: 24 * time.Hour}},
		{"counter-1000000-per-day", Rule{N: 1000000, Window: 24 * time.Hour}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var bytes uint64
			for b.Loop() {
				bytes = fillRule(b, c.rule)
			}
			b.ReportMetric(float64(bytes), "B/rule")
		})
	}
}

// fillRule admits rule.N calls spread over one window and returns the heap
// the limiter then holds.
func fillRule(b *testing.B, rule Rule) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l, err := New(Options{Rules: []Rule{rule}})
	if err != nil {
		b.Fatal(err)
	}
	t := time.Now()
	step := rule.Window / time.Duration(rule.N+1)
	for range rule.N {
		a, ok := l.AllowN(t, 1)
		if !ok {
			b.Fatalf("rule %v refused a call", rule)
		}
		a.Release()
		t = t.Add(step)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(l)
	return after.HeapAlloc - before.HeapAlloc
}
