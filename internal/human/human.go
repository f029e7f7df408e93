// Package human writes numbers the way pace shows them to people:
// durations rounded to what a reader can use, rates in the unit of the
// rules and never above what a rule allows, byte counts with binary
// units, plurals. It is the one place these choices are made, so that the
// summary, the progress, pace audit and pace quota agree.
package human

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// Duration rounds d for display: to 1µs under 1ms, to 1ms under 10s, to
// 100ms under a minute, and whole seconds past that.
func Duration(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < 10*time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// ETA writes d to the second, or to the minute past an hour ("2h47m", not
// "2h47m0s").
func ETA(d time.Duration) string {
	if d >= time.Hour {
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
	return d.Round(time.Second).String()
}

// Instant formats t in UTC to the microsecond.
func Instant(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

// Rate writes a rate with about three significant digits.
func Rate(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 10:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.2f", r)
}

// Round3 rounds x to three decimals, as the JSON reports write ratios.
func Round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// Bytes writes n with a binary unit: "1023 B", "1.5 KiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Plural returns word, with an s unless n is 1.
func Plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// RateUnit chooses the unit rates are shown in under rules: per second
// unless every count rule allows less than one call a second. Cost rules
// say nothing of items a second.
func RateUnit(rules []throttle.Rule) (time.Duration, string) {
	fastest, counts := 0.0, false
	for _, r := range rules {
		if !r.Cost {
			fastest, counts = max(fastest, float64(r.N)/r.Window.Seconds()), true
		}
	}
	switch {
	case !counts || fastest >= 1:
		return time.Second, "/s"
	case fastest*60 >= 1:
		return time.Minute, "/min"
	}
	return time.Hour, "/h"
}

// TruthfulRate returns rate (calls a second) if no count rule allows less,
// else the least of the rules' own measures (calls a second over each
// rule's window, which a rule keeps at most N/W): a rate shown is never
// above what a rule allows, however it is read. A short run can start
// faster than N/W over its first window (a burst the rule allows), and
// that figure would read as the rule broken.
func TruthfulRate(rate float64, rules []throttle.Rule, measure func(throttle.Rule) float64) float64 {
	least, over := rate, false
	for _, r := range rules {
		if r.Cost || r.Window <= 0 {
			continue
		}
		if rate > float64(r.N)/r.Window.Seconds() {
			over = true
		}
		least = min(least, measure(r))
	}
	if over {
		return least
	}
	return rate
}
