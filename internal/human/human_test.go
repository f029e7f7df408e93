package human

import (
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

func TestFormatters(t *testing.T) {
	for _, tt := range []struct {
		got, want string
	}{
		{Rate(0), "0.00"}, {Rate(8.306), "8.31"}, {Rate(15), "15.0"}, {Rate(123.4), "123"},
		{Duration(1234 * time.Nanosecond).String(), "1µs"},
		{Duration(1234567 * time.Nanosecond).String(), "1ms"},
		{Duration(12345 * time.Millisecond).String(), "12.3s"},
		{Duration(90*time.Second + 400*time.Millisecond).String(), "1m30s"},
		{Bytes(1023), "1023 B"}, {Bytes(1536), "1.5 KiB"}, {Bytes(3 << 30), "3.0 GiB"},
		{Plural(1, "item"), "item"}, {Plural(2, "item"), "items"}, {Plural(0, "item"), "items"},
		{Instant(time.Unix(1700000000, 250000000)), "2023-11-14T22:13:20.250000Z"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if got := Round3(0.12345); got != 0.123 {
		t.Errorf("Round3(0.12345) = %v, want 0.123", got)
	}
}

func TestETA(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{1400 * time.Millisecond, "1s"},
		{3*time.Minute + 20*time.Second + 500*time.Millisecond, "3m21s"},
		{2*time.Hour + 10*time.Minute + 31*time.Second, "2h11m"},
		{23*time.Hour + 59*time.Minute + 50*time.Second, "24h0m"},
	} {
		if got := ETA(tt.d); got != tt.want {
			t.Errorf("ETA(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestRateUnit(t *testing.T) {
	for _, tt := range []struct {
		rules string
		want  string
	}{
		{"", "/s"}, {"5/s", "/s"}, {"30/min", "/min"}, {"1/s,30/min", "/s"}, {"10/h", "/h"}, {"100/s", "/s"},
	} {
		var rules []throttle.Rule
		if tt.rules != "" {
			var err error
			if rules, err = throttle.ParseRules(tt.rules); err != nil {
				t.Fatal(err)
			}
		}
		if _, got := RateUnit(rules); got != tt.want {
			t.Errorf("RateUnit(%s) = %s, want %s", tt.rules, got, tt.want)
		}
	}
}

func TestTruthfulRate(t *testing.T) {
	rules, err := throttle.ParseRules("10/s")
	if err != nil {
		t.Fatal(err)
	}
	measure := func(throttle.Rule) float64 { return 7 }
	if got := TruthfulRate(8, rules, measure); got != 8 {
		t.Errorf("TruthfulRate(8 under 10/s) = %v, want 8: under the rule, as measured", got)
	}
	if got := TruthfulRate(25, rules, measure); got != 7 {
		t.Errorf("TruthfulRate(25 under 10/s) = %v, want the rule's own measure 7", got)
	}
}
