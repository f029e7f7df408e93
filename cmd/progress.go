package cmd

import (
	"fmt"
	"github.com/pace-cli/pace/internal/human"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// Progress is drawn in one of three ways: a bar redrawn in place on a
// terminal, plain status lines at a steady interval for logs (CI), or not
// at all. Counting is the tally's; this file only draws.

// barEvery is how often the bar is redrawn.
const barEvery = 200 * time.Millisecond

// Defaults and bounds of --progress-interval, for status lines.
const (
	defaultProgressInterval = 10 * time.Second
	minProgressInterval     = time.Second
)

// rateWindow is the span over which the rate shown is measured: recent
// enough to follow the run, long enough to smooth over one window's stall.
const rateWindow = 10 * time.Second

// display serialises everything pace writes to stderr, so that job
// output, log lines and the progress never cut into each other: the bar
// is erased before anything else is written and drawn again right after.
// It keeps track of where the screen's cursor is: output that does not
// end in a newline is never drawn over, the bar goes to a line of its own
// below it. It is safe for concurrent use.
type display struct {
	w        io.Writer
	mode     string        // progressAlways (a bar), progressLines or progressNever
	interval time.Duration // between status lines
	width    func() int    // the terminal's columns, read at each draw
	// outOnScreen: stdout is a terminal too, so job output shares the
	// screen with the bar.
	outOnScreen bool
	// waiting, if set, returns how many calls wait for their admission,
	// for the status (pace proxy's requests).
	waiting func() int64

	mu      sync.Mutex
	bar     *termBar // nil unless mode is progressAlways
	midLine bool     // the screen's cursor follows output that did not end in a newline
	status  barStatus
	done    int64 // items done
	closed  bool
}

// barStatus is what the bar shows besides the count: the total (-1:
// unknown) and the rest of the status text in parts; ready once the
// progress has begun. The count is the display's own, so that a redraw
// right after an item's output counts that item.
type barStatus struct {
	total int64
	parts []statusPart
	ready bool
}

// newDisplay returns the display for --progress mode on ios's stderr.
func newDisplay(ios *IOStreams, mode string, interval time.Duration) *display {
	if mode == progressAuto {
		mode = progressLines
		if ios.IsStderrTTY() {
			mode = progressAlways
		}
	}
	d := &display{w: ios.ErrOut, mode: mode, interval: max(interval, minProgressInterval),
		width: ios.TerminalWidth, outOnScreen: ios.IsStdoutTTY()}
	if mode == progressAlways {
		d.bar = newTermBar(ios.ErrOut)
	}
	return d
}

// shows reports whether the display shows progress at all.
func (d *display) shows() bool { return d.mode != progressNever }

// write runs fn, which writes to stderr or stdout, with the bar erased,
// and draws the bar again at once. What fn writes to the screen goes
// through writers from screen, so that the display knows where the
// cursor is.
func (d *display) write(fn func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.eraseLocked()
	fn()
	d.drawLocked()
}

// screen returns a writer to w for use inside write's fn that tells the
// display what reaches the screen: stderr, and stdout when it is a
// terminal (out).
func (d *display) screen(w io.Writer, out bool) io.Writer {
	if d.bar == nil || (out && !d.outOnScreen) {
		return w
	}
	return screenWriter{d, w}
}

// screenWriter writes to the screen through a display. Its Write
// requires d.mu held: it is called from inside display.write.
type screenWriter struct {
	d *display
	w io.Writer
}

func (s screenWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.d.sawLocked(p[:n])
	return n, err
}

// sawLocked notes that p reached the screen. Requires d.mu held.
func (d *display) sawLocked(p []byte) {
	if len(p) > 0 {
		d.midLine = p[len(p)-1] != '\n'
	}
}

// add counts n more items done.
func (d *display) add(n int) {
	d.mu.Lock()
	d.done += int64(n)
	d.mu.Unlock()
}

// eraseLocked erases the bar. Requires d.mu held.
func (d *display) eraseLocked() {
	if d.bar != nil {
		d.bar.clear()
	}
}

// drawLocked draws the bar with the latest status in place of the one on
// screen, on a line of its own. Requires d.mu held.
func (d *display) drawLocked() {
	if d.bar == nil || d.closed || !d.status.ready {
		return
	}
	if d.midLine {
		// Output without a final newline stays whole: the bar goes below.
		io.WriteString(d.w, "\n")
		d.midLine = false
	}
	parts := append([]statusPart{{text: countText(d.done, d.status.total)}}, d.status.parts...)
	d.bar.draw(d.done, d.status.total, parts, d.width())
}

// close erases the bar for good, and ends a line that output left open,
// so that what follows (the summary) starts a line of its own.
func (d *display) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.eraseLocked()
	if d.bar != nil && d.midLine {
		io.WriteString(d.w, "\n")
		d.midLine = false
	}
	d.closed = true
}

// follow draws progress until done is closed: the bar every barEvery, a
// status line every interval (nothing for a run shorter than that).
func (d *display) follow(done <-chan struct{}, b throttle.Backend, t *tally, total *total, o *CommonOptions, learned func() []throttle.Rule) {
	if d.mode == progressNever {
		return
	}
	every := barEvery
	if d.mode == progressLines {
		every = d.interval
	}
	p := newProgress(o.allRules(), o.Jobs)
	p.extra, p.waiting = learned, d.waiting
	// The rate counts from the start, not from the first tick.
	p.samples = append(p.samples, sample{time.Now(), 0})
	if d.mode == progressAlways {
		d.mu.Lock()
		tot := total.get()
		d.status = barStatus{total: tot, parts: p.status(time.Now(), 0, t.snapshot(), b.Stats(), tot)[1:], ready: true}
		d.drawLocked()
		d.mu.Unlock()
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			st := b.Stats()
			ts := t.snapshot()
			d.mu.Lock()
			doneN := d.done
			d.mu.Unlock()
			tot := total.get()
			parts := p.status(now, doneN, ts, st, tot)
			d.mu.Lock()
			if d.mode == progressLines {
				if !d.closed {
					fmt.Fprintf(d.w, "pace: %s\n", joinStatus(parts))
				}
			} else {
				d.status = barStatus{total: tot, parts: parts[1:], ready: true}
				d.drawLocked()
			}
			d.mu.Unlock()
		}
	}
}

// progress computes what the display shows: counts, a rate over a recent
// window in one unit for the whole run, what admissions wait on, an ETA.
type progress struct {
	rules   []throttle.Rule
	jobs    int
	unit    time.Duration // the rate's unit: a second, minute or hour
	unitStr string
	samples []sample // recent (time, done) pairs, oldest first
	// extra, if set, returns the rules learned from the server, which
	// hold calls back as the user's do.
	extra func() []throttle.Rule
	// waiting, if set, returns how many calls wait for their admission
	// (pace proxy's requests).
	waiting func() int64
	// The latest ETA, recomputed at most once a second.
	etaAt   time.Time
	etaLeft int64
	etaEnd  time.Time
}

type sample struct {
	at   time.Time
	done int64
}

// newProgress makes the progress of a run under rules with jobs at once.
func newProgress(rules []throttle.Rule, jobs int) *progress {
	p := &progress{rules: rules, jobs: jobs}
	p.unit, p.unitStr = human.RateUnit(rules)
	return p
}

// rate returns the rate shown, per unit: items done over the recent
// window (over at least a second, so that two quick items are not read
// as a burst rate). Where that is above a count rule's N/W (a burst the
// rule allows, which would read as the rule broken), it is each rule's
// calls in its window now over the window instead (st's Used: the calls
// of earlier runs and of a fleet count too), never above N/W.
func (p *progress) rate(now time.Time, done int64, st throttle.Stats) float64 {
	p.samples = append(p.samples, sample{now, done})
	for len(p.samples) > 2 && now.Sub(p.samples[1].at) >= rateWindow {
		p.samples = p.samples[1:]
	}
	first := p.samples[0]
	span := max(now.Sub(first.at), time.Second)
	r := float64(done-first.done) / span.Seconds()
	rules := make([]throttle.Rule, len(st.Rules))
	used := make(map[throttle.Rule]int, len(st.Rules))
	for i, rs := range st.Rules {
		rules[i] = rs.Rule
		used[rs.Rule] = rs.Used
	}
	r = human.TruthfulRate(r, rules, func(rule throttle.Rule) float64 { return float64(used[rule]) / rule.Window.Seconds() })
	return r * p.unit.Seconds()
}

// status is the status in parts: "120/1000 done, 3 failed, 4.9/s,
// waiting on 5/s, ETA 3m20s". A narrow terminal drops the rate first,
// then the rule, the ETA and the failures; never the count.
func (p *progress) status(now time.Time, done int64, t tallySnapshot, st throttle.Stats, total int64) []statusPart {
	parts := []statusPart{{text: countText(done, total)}}
	if t.Failed > 0 {
		parts = append(parts, statusPart{fmt.Sprintf("%d failed", t.Failed), 1})
	}
	if p.waiting != nil {
		parts = append(parts, statusPart{fmt.Sprintf("%d waiting", p.waiting()), 2})
	}
	parts = append(parts, statusPart{human.Rate(p.rate(now, done, st)) + p.unitStr, 4})
	switch b := st.Busiest(); {
	case st.PausedUntil.After(now):
		parts = append(parts, statusPart{fmt.Sprintf("paused by the server for %s", human.ETA(st.PausedUntil.Sub(now))), 3})
	case b >= 0 && st.Rules[b].Usage >= 1:
		parts = append(parts, statusPart{fmt.Sprintf("waiting on %s", st.Rules[b].Rule), 3})
	case b >= 0:
		parts = append(parts, statusPart{fmt.Sprintf("%s at %.0f%%", st.Rules[b].Rule, st.Rules[b].Usage*100), 3})
	}
	if total >= 0 && done < total {
		if eta, ok := p.eta(now, total-t.ItemsStarted, t, st.PausedUntil); ok {
			parts = append(parts, statusPart{"ETA " + human.ETA(eta), 2})
		}
	}
	return parts
}

// countText is the status's first part: "120/1000 done", or "120 done"
// while the total is unknown (-1).
func countText(done, total int64) string {
	if total >= 0 {
		return fmt.Sprintf("%d/%d done", done, total)
	}
	return fmt.Sprintf("%d done", done)
}

// text is the status as one line.
func (p *progress) text(now time.Time, done int64, t tallySnapshot, st throttle.Stats, total int64) string {
	return joinStatus(p.status(now, done, t, st, total))
}

// etaSimulated bounds the calls the ETA simulates; past that it scales.
const etaSimulated = 20000

// eta estimates how long the run has left with left items still to start:
// the fastest legal schedule for them after the admissions already made
// (throttle.Plan, so that a daily quota spent early holds the rest back),
// plus a job's mean runtime. The plan starts when a server's pause ends,
// and keeps the rules pace learned from the server (extra) as well.
func (p *progress) eta(now time.Time, left int64, t tallySnapshot, pausedUntil time.Time) (time.Duration, bool) {
	if left <= 0 {
		return t.P50, true
	}
	if p.etaAt.Add(time.Second).After(now) && p.etaLeft == left {
		return max(p.etaEnd.Sub(now), 0), true
	}
	n := min(left, etaSimulated)
	costs := make([]int, n)
	for i := range costs {
		costs[i] = max(t.MeanCost, 1)
	}
	rules, start := p.rules, now
	if p.extra != nil {
		rules = append(slices.Clone(rules), p.extra()...)
	}
	if pausedUntil.After(now) {
		start = pausedUntil
	}
	plan := throttle.Plan(rules, t.Recent, costs, start, p.jobs, t.P50)
	last := plan[len(plan)-1].Sub(now)
	if n < left {
		last = time.Duration(float64(last) * float64(left) / float64(n))
	}
	p.etaAt, p.etaLeft, p.etaEnd = now, left, now.Add(last+t.P50)
	return last + t.P50, true
}

// total is the number of items a run will start, once known (-1 before).
type total struct{ n atomic.Int64 }

func newTotal() *total {
	t := &total{}
	t.n.Store(-1)
	return t
}

func (t *total) set(n int64) { t.n.Store(n) }
func (t *total) get() int64  { return t.n.Load() }

// setOnce sets the total unless it is known already.
func (t *total) setOnce(n int64) { t.n.CompareAndSwap(-1, n) }

// displayWriter is an io.Writer that writes through a display.
type displayWriter struct {
	d *display
	w io.Writer
}

func (dw displayWriter) Write(p []byte) (n int, err error) {
	dw.d.write(func() { n, err = dw.d.screen(dw.w, false).Write(p) })
	return n, err
}
