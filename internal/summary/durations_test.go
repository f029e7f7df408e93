package summary

import (
	"math"
	"testing"
	"time"
)

func TestDurationsExact(t *testing.T) {
	var d Durations
	if got := d.Quantile(0.5); got != 0 {
		t.Errorf("quantile(0.5) of nothing = %v, want 0", got)
	}
	for i := 100; i >= 1; i-- {
		d.Add(time.Duration(i) * time.Millisecond)
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.95, 95 * time.Millisecond}, {1, 100 * time.Millisecond}, {0.001, time.Millisecond}} {
		if got := d.Quantile(tt.q); got != tt.want {
			t.Errorf("quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if d.Max() != 100*time.Millisecond {
		t.Errorf("max = %v, want 100ms", d.max)
	}
	d.Add(-time.Second) // a clock step: counted as 0
	if got := d.Quantile(0.001); got != 0 {
		t.Errorf("quantile(0.001) after a negative duration = %v, want 0", got)
	}
}

func TestDurationsBoundedAndClose(t *testing.T) {
	var d Durations
	const n = 200_000
	for i := 1; i <= n; i++ {
		d.Add(time.Duration(i) * time.Microsecond)
	}
	if d.exact != nil || len(d.buckets) > 2000 {
		t.Errorf("kept %d exact values and %d buckets, want bounded memory", len(d.exact), len(d.buckets))
	}
	for _, q := range []float64{0.5, 0.95} {
		want := q * n * float64(time.Microsecond)
		if got := float64(d.Quantile(q)); math.Abs(got-want)/want > 0.01 {
			t.Errorf("quantile(%v) = %v, want within 1%% of %v", q, time.Duration(got), time.Duration(want))
		}
	}
	if d.Max() != n*time.Microsecond {
		t.Errorf("max = %v, want exactly %v", d.max, n*time.Microsecond)
	}
}
