//go:build unix

package localstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle/localstore"
)

// BenchmarkAdmit measures the admission hot path through the store file:
// rules that never make a caller wait, so every admission is one
// transaction (under the store's lock, check that the file kept open is
// current, check and record every rule, commit). "processes" runs real child processes sharing
// the quota; "goroutines" callers of one Store. It reports transactions
// per admission (1 in steady state) and admissions per second.
func BenchmarkAdmit(b *testing.B) {
	for _, bm := range []struct {
		name          string
		rules         string
		procs, gorout int
		cost          int
		sync          bool // Options.Sync
	}{
		{"log/1", "100000/ms", 0, 1, 1, false},
		{"log/1-sync", "100000/ms", 0, 1, 1, true},
		{"log/4-goroutines", "100000/ms", 0, 4, 1, false},
		{"log/4-processes", "100000/ms", 4, 0, 1, false},
		{"log/4-processes-sync", "100000/ms", 4, 0, 1, true},
		{"counter/1", "1000000000/s", 0, 1, 1, false},
		{"cost-log/1", "100000/ms,cost:100000/ms", 0, 1, 3, false},
		{"log+counter/1", "100000/ms,1000000000/h", 0, 1, 1, false},
	} {
		b.Run(bm.name, func(b *testing.B) {
			if bm.procs > 0 {
				benchmarkProcesses(b, bm.rules, bm.procs, bm.sync)
				return
			}
			benchmarkAdmit(b, bm.rules, bm.gorout, bm.cost, bm.sync)
		})
	}
}

func benchmarkAdmit(b *testing.B, rules string, goroutines, cost int, syncEach bool) {
	s := open(b, b.TempDir(), "bench", rules, localstore.Options{Sync: syncEach})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				a, err := s.Admit(ctx, cost)
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
	st := s.Stats()
	b.ReportMetric(float64(st.Store.RoundTrips-1)/float64(st.Admitted), "tx/admission")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admissions/s")
}

// benchmarkProcesses starts procs children, each admitting its share of
// b.N once all are ready; only the admissions are timed.
func benchmarkProcesses(b *testing.B, rules string, procs int, syncEach bool) {
	dir := b.TempDir()
	var cs []*child
	for i := range procs {
		n := b.N / procs
		if i < b.N%procs {
			n++
		}
		cs = append(cs, startChild(b, childEnv{mode: "bench", dir: dir, key: "bench", rules: rules, n: n, sync: syncEach}))
	}
	for _, c := range cs {
		c.waitLine(b, "ready", time.Minute)
	}
	b.ResetTimer()
	for _, c := range cs {
		fmt.Fprintln(c.stdin)
	}
	var admitted, trips int64
	for _, c := range cs {
		<-c.done
		if c.err != nil {
			b.Fatalf("child: %v\n%s", c.err, c.errb.String())
		}
		c.mu.Lock()
		for _, l := range c.out {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "done" {
				a, _ := strconv.ParseInt(f[1], 10, 64)
				r, _ := strconv.ParseInt(f[2], 10, 64)
				admitted, trips = admitted+a, trips+r-1 // less Open's
			}
		}
		c.mu.Unlock()
	}
	b.StopTimer()
	if admitted != int64(b.N) {
		b.Fatalf("children admitted %d calls, want %d", admitted, b.N)
	}
	b.ReportMetric(float64(trips)/float64(admitted), "tx/admission")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "admissions/s")
}

// BenchmarkOpenAdmitClose measures what pace exec asks of the store once
// its process has started: open an existing quota (the check of its
// rules, which keeps the file open on Linux), admit one call, close.
func BenchmarkOpenAdmitClose(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	o := localstore.Options{Dir: dir, Key: "exec", Rules: mustRules(b, "100000/ms"), Jitter: -1}
	for b.Loop() {
		s, err := localstore.Open(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		a, err := s.Admit(ctx, 1)
		if err != nil {
			b.Fatal(err)
		}
		a.Release()
		_ = s.Close()
	}
}
