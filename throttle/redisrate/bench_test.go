package redisrate_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// BenchmarkAdmit measures the admission hot path against a real server:
// rules that never make a caller wait, so every admission is one script
// call. It reports round trips per admission (1 in steady state).
func BenchmarkAdmit(b *testing.B) {
	redistest.Require(b, "redis-server")
	for _, bm := range []struct {
		name                 string
		rules                string
		limiters, goroutines int
		cost                 int
	}{
		{"log/1", "100000/ms", 1, 1, 1},
		{"log/4-shared", "100000/ms", 1, 4, 1},
		{"log/4-limiters", "100000/ms", 4, 4, 1},
		{"counter/1", "1000000000/s", 1, 1, 1},
		{"counter/4-limiters", "1000000000/s", 4, 4, 1},
		{"cost-log/1", "100000/ms,cost:100000/ms", 1, 1, 3},
		{"cost-log/4-limiters", "100000/ms,cost:100000/ms", 4, 4, 3},
		{"log+counter/1", "100000/ms,1000000000/h", 1, 1, 1},
	} {
		b.Run(bm.name, func(b *testing.B) { benchmarkAdmit(b, bm.rules, bm.limiters, bm.goroutines, bm.cost) })
	}
}

func benchmarkAdmit(b *testing.B, rules string, limiters, goroutines, cost int) {
	srv := redistest.Start(b)
	var ls []*redisrate.Limiter
	for range limiters {
		ls = append(ls, liveOpen(b, liveClient(b, srv.Addr()), "bench", rules, redisrate.Options{}))
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		l := ls[g%len(ls)]
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				a, err := l.Admit(ctx, cost)
				if err != nil {
					b.Error(err)
					return
				}
				a.Release()
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	admitted, trips := totals(ls)
	b.ReportMetric(float64(trips)/float64(admitted), "roundtrips/admission")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admissions/s")
}
