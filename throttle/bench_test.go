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

func benchWait(b *testing.B, spec string, cost int) {
	rules, err := ParseRules(spec)
	if err != nil {
		b.Fatal(err)
	}
	l, err := New(rules)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := l.WaitN(ctx, cost); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWait3Rules is uncontended admission under 3 rules.
func BenchmarkWait3Rules(b *testing.B) {
	b.Run("exact", func(b *testing.B) { benchWait(b, exactRules, 1) })
	b.Run("counter", func(b *testing.B) { benchWait(b, counterRules, 1) })
}

// Weighted rules that never block at benchmark speeds: one count rule and
// two cost rules, admitting calls of cost 7.
const weightedRules = "100000/ms,cost:10000000/ms,cost:10000000/2ms"

// BenchmarkWaitN3Rules is uncontended weighted admission under 3 rules.
func BenchmarkWaitN3Rules(b *testing.B) {
	b.Run("exact", func(b *testing.B) { benchWait(b, weightedRules, 7) })
}

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

// BenchmarkWaitContended has 8 goroutines admitting through one limiter.
func BenchmarkWaitContended(b *testing.B) {
	rules, _ := ParseRules(exactRules)
	l, _ := New(rules)
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

// BenchmarkXTimeRateContended is BenchmarkWaitContended for one x/time/rate limiter.
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

// BenchmarkAcquireRelease is a slot plus 3 rules, released at once.
func BenchmarkAcquireRelease(b *testing.B) {
	rules, _ := ParseRules(exactRules)
	l, _ := New(rules, WithMaxInFlight(8))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		release, err := l.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
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
	l, err := New([]Rule{rule})
	if err != nil {
		b.Fatal(err)
	}
	t := time.Now()
	step := rule.Window / time.Duration(rule.N+1)
	for range rule.N {
		if !l.AllowN(t, 1) {
			b.Fatalf("rule %v refused a call", rule)
		}
		t = t.Add(step)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(l)
	return after.HeapAlloc - before.HeapAlloc
}
