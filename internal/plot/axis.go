package plot

import (
	"strconv"
	"time"
)

// tickSteps are the intervals the time axis may be labelled at, smallest
// first; tickStep extends them in whole days.
var tickSteps = func() []time.Duration {
	var steps []time.Duration
	for unit := time.Nanosecond; unit < time.Second; unit *= 10 {
		steps = append(steps, unit, 2*unit, 5*unit)
	}
	return append(steps,
		time.Second, 2*time.Second, 5*time.Second, 10*time.Second, 15*time.Second, 30*time.Second,
		time.Minute, 2*time.Minute, 5*time.Minute, 10*time.Minute, 15*time.Minute, 30*time.Minute,
		time.Hour, 2*time.Hour, 3*time.Hour, 6*time.Hour, 12*time.Hour)
}()

// tickStep returns the smallest step that puts at most maxTicks ticks
// after 0 on an axis of length span. It requires maxTicks >= 1.
func tickStep(span time.Duration, maxTicks int) time.Duration {
	for _, s := range tickSteps {
		if span/s <= time.Duration(maxTicks) {
			return s
		}
	}
	for day := 24 * time.Hour; ; day *= 10 { // 1, 2, 5, 10, 20, 50... days
		for _, k := range []time.Duration{1, 2, 5} {
			if span/(k*day) <= time.Duration(maxTicks) {
				return k * day
			}
		}
	}
}

// tickLabel formats the tick at d on an axis of length span labelled every
// step: "0" at the origin, then microseconds or milliseconds for runs
// shorter than a millisecond or a second, else days, hours, minutes and
// seconds ("45s", "1m30s", "2h", "1d12h"), with only as many decimals as
// step needs ("0.5s", "1.25ms").
func tickLabel(d, step, span time.Duration) string {
	if d == 0 {
		return "0"
	}
	switch {
	case span < time.Millisecond:
		return decimal(d, time.Microsecond, step) + "µs"
	case span < time.Second:
		return decimal(d, time.Millisecond, step) + "ms"
	}
	var b []byte
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}} {
		if d >= u.d {
			b = strconv.AppendInt(b, int64(d/u.d), 10)
			b = append(b, u.name...)
			d %= u.d
		}
	}
	if d > 0 {
		b = append(b, decimal(d, time.Second, step)...)
		b = append(b, 's')
	}
	return string(b)
}

// decimal formats d in unit with as many decimals as multiples of step
// need to be exact.
func decimal(d, unit, step time.Duration) string {
	dec := 0
	for q := unit; q > 1 && step%q != 0; q /= 10 {
		dec++
	}
	return strconv.FormatFloat(float64(d)/float64(unit), 'f', dec, 64)
}
