package cmd

import (
	"fmt"
	"io"
	"slices"
	"strings"
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
// It is safe for concurrent use.
type display struct {
	w        io.Writer
	mode     string        // progressAlways (a bar), progressLines or progressNever
	interval time.Duration // between status lines

	mu     sync.Mutex
	drawn  int    // width of the bar on screen; 0: none drawn
	last   string // the bar's text
	done   int64  // items done
	closed bool
}

// newDisplay returns the display for --progress mode on ios's stderr.
func newDisplay(ios *IOStreams, mode string, interval time.Duration) *display {
	if mode == progressAuto {
		mode = progressLines
		if ios.IsStderrTTY() {
			mode = progressAlways
		}
	}
	return &display{w: ios.ErrOut, mode: mode, interval: max(interval, minProgressInterval)}
}

// shows reports whether the display shows progress at all.
func (d *display) shows() bool { return d.mode != progressNever }

// write runs fn, which writes to stderr or stdout, with the bar erased,
// and draws the bar again at once.
func (d *display) write(fn func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.eraseLocked()
	fn()
	d.drawLocked(d.last)
}

// add counts n more items done.
func (d *display) add(n int) {
	d.mu.Lock()
	d.done += int64(n)
	d.mu.Unlock()
}

// eraseLocked erases the bar. Requires d.mu held.
func (d *display) eraseLocked() {
	if d.drawn > 0 {
		fmt.Fprintf(d.w, "\r%s\r", strings.Repeat(" ", d.drawn))
		d.drawn = 0
	}
}

// drawLocked draws the bar with text s in place of the one on screen:
// one write, no erasing first, padded to cover a longer previous one.
// Requires d.mu held.
func (d *display) drawLocked(s string) {
	if d.mode != progressAlways || d.closed || s == "" {
		return
	}
	pad := ""
	if n := len([]rune(s)); n < d.drawn {
		pad = strings.Repeat(" ", d.drawn-n)
	}
	fmt.Fprintf(d.w, "\r%s%s", s, pad)
	d.drawn = max(len([]rune(s)), d.drawn)
	d.last = s
}

// close erases the bar for good.
func (d *display) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.eraseLocked()
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
	p.extra = learned
	// The rate counts from the start, not from the first tick.
	p.samples = append(p.samples, sample{time.Now(), 0})
	if d.mode == progressAlways {
		d.mu.Lock()
		d.drawLocked(p.bar(0, total.get()) + " 0 done")
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
			text := p.text(now, doneN, ts, st, total.get())
			d.mu.Lock()
			if d.mode == progressLines {
				if !d.closed {
					fmt.Fprintf(d.w, "pace: %s\n", text)
				}
			} else {
				d.drawLocked(p.bar(doneN, total.get()) + " " + text)
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
	// The latest ETA, recomputed at most once a second.
	etaAt   time.Time
	etaLeft int64
	etaEnd  time.Time
}

type sample struct {
	at   time.Time
	done int64
}

// newProgress chooses the rate's unit from the rules: per second unless
// every count rule allows less than one call a second. Cost rules say
// nothing of items a second.
func newProgress(rules []throttle.Rule, jobs int) *progress {
	p := &progress{rules: rules, jobs: jobs, unit: time.Second, unitStr: "/s"}
	fastest, counts := 0.0, false
	for _, r := range rules {
		if !r.Cost {
			fastest, counts = max(fastest, float64(r.N)/r.Window.Seconds()), true
		}
	}
	switch {
	case !counts || fastest >= 1:
	case fastest*60 >= 1:
		p.unit, p.unitStr = time.Minute, "/min"
	default:
		p.unit, p.unitStr = time.Hour, "/h"
	}
	return p
}

// rate returns the items done per unit over the recent window at now.
func (p *progress) rate(now time.Time, done int64) float64 {
	p.samples = append(p.samples, sample{now, done})
	for len(p.samples) > 2 && now.Sub(p.samples[1].at) >= rateWindow {
		p.samples = p.samples[1:]
	}
	first := p.samples[0]
	span := now.Sub(first.at)
	if span <= 0 {
		return 0
	}
	return float64(done-first.done) / span.Seconds() * p.unit.Seconds()
}

// text is the status: "120/1000 done, 3 failed, 4.9/s, waiting on 5/s, ETA 3m20s".
func (p *progress) text(now time.Time, done int64, t tallySnapshot, st throttle.Stats, total int64) string {
	var parts []string
	if total >= 0 {
		parts = append(parts, fmt.Sprintf("%d/%d done", done, total))
	} else {
		parts = append(parts, fmt.Sprintf("%d done", done))
	}
	if t.Failed > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", t.Failed))
	}
	parts = append(parts, formatRate(p.rate(now, done))+p.unitStr)
	switch b := st.Busiest(); {
	case st.PausedUntil.After(now):
		parts = append(parts, fmt.Sprintf("paused by the server for %s", roundETA(st.PausedUntil.Sub(now))))
	case b >= 0 && st.Rules[b].Usage >= 1:
		parts = append(parts, fmt.Sprintf("waiting on %s", st.Rules[b].Rule))
	case b >= 0:
		parts = append(parts, fmt.Sprintf("%s at %.0f%%", st.Rules[b].Rule, st.Rules[b].Usage*100))
	}
	if total >= 0 && done < total {
		if eta, ok := p.eta(now, total-t.ItemsStarted, t, st.PausedUntil); ok {
			parts = append(parts, "ETA "+roundETA(eta))
		}
	}
	return strings.Join(parts, ", ")
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

// bar draws a 20-cell bar of done out of total, or a count when the total
// is unknown.
func (p *progress) bar(done, total int64) string {
	const width = 20
	if total <= 0 {
		return "[" + strings.Repeat("·", width) + "]"
	}
	filled := int(min(done, total) * width / total)
	return "[" + strings.Repeat("█", filled) + strings.Repeat("·", width-filled) + "]"
}

// roundETA writes d to the second, or to the minute past an hour.
func roundETA(d time.Duration) string {
	if d >= time.Hour {
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
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

// displayWriter is an io.Writer that writes through a display.
type displayWriter struct {
	d *display
	w io.Writer
}

func (dw displayWriter) Write(p []byte) (n int, err error) {
	dw.d.write(func() { n, err = dw.w.Write(p) })
	return n, err
}
