package spec

import (
	"testing"
	"time"
)

func TestGuessRule(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"5s", "5/s"}, {"5 s", "5/s"}, {"5sec", "5/s"}, {"10m", "10/min"}, {"3h", "3/h"}, {"2d", "2/day"}, {"100ms", "100/ms"},
		{"5 per second", "5/s"}, {"5 per 3s", "5/3s"}, {"5 every minute", "5/min"}, {"5/ second", "5/s"}, {"5 an hour", "5/h"},
		{"5 per fortnight", ""}, {"5x", ""}, {"fast", ""}, {"", ""},
	} {
		if got := guessRule(tt.in); got != tt.want {
			t.Errorf("guessRule(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{{"5s", 5 * time.Second}, {" 1m30s ", 90 * time.Second}, {"500ms", 500 * time.Millisecond}, {"0", 0}} {
		if got, err := Duration(tt.in); err != nil || got != tt.want {
			t.Errorf("Duration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"5", "want a duration with a unit, such as 5s or 5ms"},
		{"1.5", "want a duration with a unit, such as 1.5s or 1.5ms"},
		{"5/s", "want a duration such as 5s, 500ms or 1m30s (this flag takes a duration, not a rule)"},
		{"soon", "want a duration such as 5s, 500ms or 1m30s"},
		{"", "want a duration such as 5s, 500ms or 1m30s"},
		{"9999999h", "want a duration of at most 2562047h47m16s (about 292 years)"},
		{"1e9h", "want a duration such as 5s, 500ms or 1m30s"},
	} {
		_, err := Duration(tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Duration(%q) = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
	}{
		{"1024", 1024}, {"0", 0}, {"64k", 64 << 10}, {"64K", 64 << 10}, {"10MB", 10 << 20}, {"2GiB", 2 << 30},
		{" 3 t ", 3 << 40}, {"7b", 7},
	} {
		if got, err := Size(tt.in); err != nil || got != tt.want {
			t.Errorf("Size(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "k", "12q", "-1", "1.5M", "9999999999999999999", "5000000000000000000k", "4P"} {
		_, err := Size(in)
		if err == nil || err.Error() != "want a size such as 1048576, 512k, 64M or 4G" {
			t.Errorf("Size(%q) = %v, want the size hint", in, err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0"}, {1000, "1000"}, {1024, "1k"}, {1536, "1536"}, {64 << 20, "64M"}, {3 << 30, "3G"}, {5 << 40, "5T"}} {
		if got := FormatSize(tt.n); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// FuzzSizeRoundTrip: parseSize reads back what formatSize writes.
func FuzzSizeRoundTrip(f *testing.F) {
	for _, n := range []int64{0, 1, 1023, 1024, 64 << 20, 3 << 30, 1 << 50} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		if n < 0 || n > 1<<62 {
			return
		}
		got, err := Size(FormatSize(n))
		if err != nil || got != n {
			t.Errorf("Size(FormatSize(%d) = %q) = %d, %v", n, FormatSize(n), got, err)
		}
	})
}

func TestParallelDelay(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"2", 2 * time.Second, true}, {"0.25", 250 * time.Millisecond, true}, {"1.5m", 90 * time.Second, true},
		{"1h", time.Hour, true}, {"1d", 24 * time.Hour, true},
		{"", 0, false}, {"0", 0, false}, {"-1", 0, false}, {"NaN", 0, false}, {"soon", 0, false}, {"1y", 0, false},
	} {
		if got, ok := ParallelDelay(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("ParallelDelay(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--delay", "2"}, "--delay 2 is GNU parallel's; pace's is -r 1/2s"},
		{[]string{"--delay=0.25", "echo"}, "--delay 0.25 is GNU parallel's; pace's is -r 4/s (or -r 1/250ms to space every start by 250ms)"},
		{[]string{"--", "--delay", "2"}, ""},
		{[]string{"--delay", "soon"}, ""},
	} {
		if got := DelayHint(tt.args); got != tt.want {
			t.Errorf("DelayHint(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestFlagHint(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fetch bool
		args  []string
		want  string
	}{
		{"P", false, nil, "-P is xargs's and GNU parallel's; pace's is -j N (jobs at once)"},
		{"L", false, nil, "-L is xargs's; pace runs one item (line) per job"},
		{"L", true, nil, "-L is curl's; pace fetch already follows redirects (at most 10)"},
		{"s", false, nil, ""},
		{"delay", false, nil, "pace spaces calls with rules: -r 1/2s for one call every two seconds"},
		{"delay", false, []string{"--delay", "2"}, "--delay 2 is GNU parallel's; pace's is -r 1/2s"},
		{"no-such-flag", false, nil, ""},
	} {
		if got := FlagHint(tt.name, tt.fetch, tt.args); got != tt.want {
			t.Errorf("FlagHint(%q, fetch %v, %q) = %q, want %q", tt.name, tt.fetch, tt.args, got, tt.want)
		}
	}
}

// FuzzUserInput: whatever a user types for a rule list, a duration or
// GNU parallel's --delay is read or refused with a message, never a
// panic; what is read is valid: rules that throttle accepts, a delay that
// a rule can hold.
func FuzzUserInput(f *testing.F) {
	for _, s := range []string{
		"10/s", "10/s,500/min", "5s", "5 per second", "1m30s", "-5s", "0", "1.5", "3d", "0.5",
		",", "5/s,", ",5/s", "cost:5/s", "1e400", "NaN", "9223372036854775807ns", "1/0s", "5/ second",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, cost := range []bool{false, true} {
			rs, err := Rules(s, cost)
			if err != nil {
				if err.Error() == "" {
					t.Fatalf("Rules(%q): an empty error", s)
				}
				continue
			}
			if len(rs) == 0 {
				t.Fatalf("Rules(%q) = no rules, no error", s)
			}
			for _, r := range rs {
				if !r.Valid() || r.Cost != cost && cost {
					t.Fatalf("Rules(%q, %v) gave %+v", s, cost, r)
				}
			}
		}
		if _, err := Duration(s); err != nil && err.Error() == "" {
			t.Fatalf("Duration(%q): an empty error", s)
		}
		if d, ok := ParallelDelay(s); ok && d <= 0 {
			t.Fatalf("ParallelDelay(%q) = %v", s, d)
		}
		_ = DelayHint([]string{"--delay", s})
		_ = FlagHint(s, true, []string{"--delay=" + s})
		_, _ = Size(s)
	})
}
