package plot

import (
	"io"
	"testing"
)

// BenchmarkRender draws a million calls under three rules, as a job log
// lists them (nearly sorted), and already sorted.
func BenchmarkRender(b *testing.B) {
	calls := bigCalls(1_000_000)
	sorted := slicesSortedByStart(calls)
	for _, bc := range []struct {
		name  string
		calls []Call
	}{{"1e6/joblog-order", calls}, {"1e6/sorted", sorted}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				var w countWriter
				if err := Render(&w, bigRules, bc.calls, nil, Options{}); err != nil {
					b.Fatal(err)
				}
				size = int(w)
			}
			b.ReportMetric(float64(size), "svg-bytes")
		})
	}
}

// countWriter counts the bytes written to it.
type countWriter int

func (w *countWriter) Write(p []byte) (int, error) {
	*w += countWriter(len(p))
	return len(p), nil
}

var _ io.Writer = (*countWriter)(nil)
