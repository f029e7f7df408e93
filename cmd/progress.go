package cmd

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/pace-cli/pace/throttle"
)

// refreshEvery is how often the bar's rule usage and ETA are recomputed.
const refreshEvery = 250 * time.Millisecond

// display serialises everything written to the terminal so that job
// output, log lines and the progress bar never cut into each other: the
// bar is cleared before anything else is written and drawn again after.
// It is safe for concurrent use.
type display struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar // nil: no bar
}

// newBar returns a bar drawn on w; total < 0 means unknown (a counter
// and a rate instead of a bar).
func newBar(w io.Writer, total int64) *progressbar.ProgressBar {
	if total < 0 {
		total = -1
	}
	return progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(25),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("jobs"),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionSetSpinnerChangeInterval(0), // no goroutine of its own
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionUseANSICodes(false),
	)
}

// write runs fn, which writes to the terminal, with the bar cleared.
func (d *display) write(fn func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bar != nil {
		d.bar.Clear()
	}
	fn()
	if d.bar != nil {
		d.bar.RenderBlank()
	}
}

// add moves the bar by n items.
func (d *display) add(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bar != nil {
		d.bar.Add(n)
	}
}

// setTotal tells the bar the number of items once it is known.
func (d *display) setTotal(total int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bar != nil && total >= 0 {
		d.bar.ChangeMax64(total)
	}
}

// describe sets the text after the bar.
func (d *display) describe(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bar != nil {
		d.bar.Describe(s)
	}
}

// close erases the bar for good.
func (d *display) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bar != nil {
		d.bar.Exit()
		d.bar.Clear()
		d.bar = nil
	}
}

// displayWriter is an io.Writer that writes through a display.
type displayWriter struct {
	d *display
	w io.Writer
}

func (dw displayWriter) Write(p []byte) (n int, err error) {
	dw.d.write(func() { n, err = dw.w.Write(p) })
	return n, err
}

// barText is what follows the bar: the binding rule with its usage now,
// the ETA when the total is known, and whether pace is stopping.
func barText(st throttle.Stats, eta time.Duration, etaKnown bool, stopping string) string {
	var parts []string
	if st.Binding >= 0 && st.Binding < len(st.Rules) {
		r := st.Rules[st.Binding]
		parts = append(parts, fmt.Sprintf("%s %.0f%%", r.Rule, r.Usage*100))
	}
	if etaKnown {
		parts = append(parts, "ETA "+formatETA(eta))
	}
	if stopping != "" {
		parts = append(parts, stopping)
	}
	return strings.Join(parts, ", ")
}

// formatETA writes d to the second, or to the minute past an hour.
func formatETA(d time.Duration) string {
	if d >= time.Hour {
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}

// etaLogCap bounds the admissions an etaEstimator remembers. Rules with a
// larger N are estimated as if their calls were spread evenly over the
// window.
const etaLogCap = 1 << 16

// etaEstimator predicts when a run will end under its rules. It remembers
// the latest admissions, as many as the largest rule's N (up to
// etaLogCap), so that it can replay each rule's window: the j-th call
// still to come under a rule N/W can go once the call N places before it
// is W old. That knows that a rule such as 10000/day, spent in its first
// hour, holds the rest of the run for a day, which a projection of the
// recent rate does not. It is safe for concurrent use.
type etaEstimator struct {
	mu   sync.Mutex
	ring []time.Time // the latest admissions; ring[next-1] is the newest
	next int
	size int
}

// newETAEstimator returns an estimator for rules.
func newETAEstimator(rules []throttle.Rule) *etaEstimator {
	n := 0
	for _, r := range rules {
		n = max(n, min(r.N, etaLogCap))
	}
	return &etaEstimator{ring: make([]time.Time, n)}
}

// admitted records an admission at t.
func (e *etaEstimator) admitted(t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.ring) == 0 {
		return
	}
	e.ring[e.next] = t
	e.next = (e.next + 1) % len(e.ring)
	e.size = min(e.size+1, len(e.ring))
}

// latest returns the k-th latest admission (k >= 1), if remembered.
// Requires e.mu held.
func (e *etaEstimator) latest(k int) (time.Time, bool) {
	if k < 1 || k > e.size {
		return time.Time{}, false
	}
	i := (e.next - k + len(e.ring)) % len(e.ring)
	return e.ring[i], true
}

// estimate returns how long the rest of the run should take at now:
// toStart items have still to be admitted and inFlight are running, each
// for about mean. The starts must fit under every rule (whose windows are
// widened by margin) and through jobs slots, and the last of them must
// then run.
func (e *etaEstimator) estimate(now time.Time, toStart int64, inFlight int, rules []throttle.RuleStats,
	margin time.Duration, jobs int, mean time.Duration) time.Duration {
	if toStart <= 0 {
		if inFlight > 0 {
			return mean
		}
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var last time.Duration // from now to the last admission
	for _, rs := range rules {
		last = max(last, e.lastAdmission(now, toStart, rs, margin))
	}
	eta := satAdd(last, mean)
	if jobs > 0 && mean > 0 { // the slots' bound: rounds of jobs at a time
		rounds := (toStart + int64(inFlight) + int64(jobs) - 1) / int64(jobs)
		eta = max(eta, saturatingMul(mean, rounds))
	}
	return eta
}

// lastAdmission returns how long from now the last of toStart more calls
// can be admitted under one rule. Requires e.mu held.
func (e *etaEstimator) lastAdmission(now time.Time, toStart int64, rs throttle.RuleStats, margin time.Duration) time.Duration {
	n, w := int64(rs.Rule.N), rs.Rule.Window+margin
	if rs.Rule.N > len(e.ring) {
		// Too many calls to remember: assume those in the window now
		// leave it evenly over the next window.
		need := toStart - max(n-int64(rs.Used), 0)
		if need <= 0 {
			return 0
		}
		return time.Duration(float64(w) * float64(need) / float64(n))
	}
	// Call j (1-based, still to come) goes once call j-N is w old: for
	// j = q*N + r it is the r-th of the window replayed q more times.
	q, r := (toStart-1)/n, (toStart-1)%n+1
	wait := time.Duration(0)
	if t, ok := e.latest(int(n - r + 1)); ok {
		wait = max(t.Add(w).Sub(now), 0)
	}
	return satAdd(wait, saturatingMul(w, q))
}

func satAdd(a, b time.Duration) time.Duration {
	if a > time.Duration(math.MaxInt64)-b {
		return time.Duration(math.MaxInt64)
	}
	return a + b
}

func saturatingMul(d time.Duration, n int64) time.Duration {
	if n > 0 && d > time.Duration(math.MaxInt64)/time.Duration(n) {
		return time.Duration(math.MaxInt64)
	}
	return d * time.Duration(n)
}
