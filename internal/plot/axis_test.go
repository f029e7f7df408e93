package plot

import (
	"testing"
	"time"
)

func TestTickStep(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		span     time.Duration
		maxTicks int
		want     time.Duration
	}{
		{time.Nanosecond, 11, time.Nanosecond},
		{7500 * time.Millisecond, 11, time.Second},
		{7500 * time.Millisecond, 5, 2 * time.Second},
		{900 * time.Millisecond, 11, 100 * time.Millisecond},
		{200 * time.Minute, 11, 30 * time.Minute}, // 15m would make 13 ticks
		{100 * day, 11, 10 * day},
		{100 * 365 * day, 11, 5000 * day},
	}
	for _, tt := range tests {
		if got := tickStep(tt.span, tt.maxTicks); got != tt.want {
			t.Errorf("tickStep(%v, %d) = %v, want %v", tt.span, tt.maxTicks, got, tt.want)
		}
	}
}

func TestTickLabel(t *testing.T) {
	const (
		ms  = time.Millisecond
		s   = time.Second
		m   = time.Minute
		h   = time.Hour
		day = 24 * h
	)
	tests := []struct {
		d, step, span time.Duration
		want          string
	}{
		{0, s, 8 * s, "0"},
		{3 * s, s, 8 * s, "3s"},
		{1500 * ms, 500 * ms, 5 * s, "1.5s"},
		{250 * ms, 250 * ms, 2 * s, "0.25s"},
		{200 * ms, 100 * ms, 900 * ms, "200ms"},
		{1500 * time.Microsecond, 500 * time.Microsecond, 5 * ms, "1.5ms"},
		{500, 100, 900, "0.5µs"},
		{90 * s, 30 * s, 5 * m, "1m30s"},
		{2 * m, m, 10 * m, "2m"},
		{90 * m, 30 * m, 3 * h, "1h30m"},
		{36 * h, 12 * h, 3 * day, "1d12h"},
		{2 * day, day, 5 * day, "2d"},
	}
	for _, tt := range tests {
		if got := tickLabel(tt.d, tt.step, tt.span); got != tt.want {
			t.Errorf("tickLabel(%v, %v, %v) = %q, want %q", tt.d, tt.step, tt.span, got, tt.want)
		}
	}
}
