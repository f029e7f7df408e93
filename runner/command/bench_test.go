//go:build unix

package command

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pace-cli/pace/runner"
)

// BenchmarkExecuteTrue runs `true` 8 jobs at a time, as `pace run -j 8 --
// true` does: the spawn path, the wait and the output capture.
func BenchmarkExecuteTrue(b *testing.B) { benchmarkTrue(b, &Executor{Builder: Lines{}}) }

// BenchmarkExecuteTrueReaper is BenchmarkExecuteTrue with a reaper (cat,
// which reads what it is told and kills nothing), as pace run has: the
// cost of telling it of each start, group and end.
func BenchmarkExecuteTrueReaper(b *testing.B) {
	benchmarkTrue(b, &Executor{Builder: Lines{}, Reaper: []string{"cat"}})
}

// benchmarkTrue runs b.N jobs of `true` through e, 8 at a time, and
// closes e.
func benchmarkTrue(b *testing.B, e *Executor) {
	defer e.Close()
	b.ReportAllocs()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				res := e.Execute(context.Background(), &runner.Job{Seq: 1, Argv: []string{"true"}})
				if !res.OK() {
					b.Errorf("true: %s", res.Status())
				}
				res.Close()
			}
		})
	}
	wg.Wait()
}
