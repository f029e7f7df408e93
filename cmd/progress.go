package cmd

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pace-cli/pace/internal/progress"
	"github.com/pace-cli/pace/internal/summary"
	"github.com/pace-cli/pace/internal/termbar"
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

// display serialises everything pace writes to stderr, so that job
// output, log lines and the progress never cut into each other: the bar
// is erased before anything else is written and drawn again right after.
// It keeps track of where the cursor is on stderr's lines (with stdout's
// when they go to the same place): output that does not end in a newline
// is never drawn over, and the bar and pace's own lines, in every mode,
// start a line of their own below it. It is safe for concurrent use.
type display struct {
	w        io.Writer
	mode     string        // progressAlways (a bar), progressLines or progressNever
	interval time.Duration // between status lines
	width    func() int    // the terminal's columns, read at each draw
	// outOnScreen: stdout goes where stderr goes (one terminal, or
	// > log 2>&1), so job output shares its lines with pace's.
	outOnScreen bool
	// waiting, if set, returns how many calls wait for their admission,
	// for the status (pace proxy's requests).
	waiting func() int64
	// typed: the items are typed on the terminal. Until the input ends
	// no progress is shown, which would write over what the user types.
	typed bool
	// notifyResize relays the terminal's resizes to a channel
	// (IOStreams.NotifyResize).
	notifyResize func(chan<- os.Signal)

	mu     sync.Mutex
	bar    *termbar.Bar  // nil unless mode is progressAlways
	line   *termbar.Line // where the cursor is on the screen's line
	status barStatus
	done   int64 // items done
	closed bool
}

// barStatus is what the bar shows besides the count: the total (-1:
// unknown) and the rest of the status text in parts; ready once the
// progress has begun. The count is the display's own, so that a redraw
// right after an item's output counts that item.
type barStatus struct {
	total int64
	parts []progress.Part
	ready bool
}

// newDisplay returns the display for --progress mode on ios's stderr:
// auto draws a bar on a terminal that knows escape sequences (TERM not
// dumb), status lines elsewhere, and where stdout is a pipe: its reader
// (| jq, | tee log) may write job output to the same terminal, which pace
// never sees, and a bar drawn there left copies of itself in front of
// that output.
func newDisplay(ios *IOStreams, mode string, interval time.Duration) *display {
	if mode == progressAuto {
		mode = progressLines
		if ios.IsStderrTTY() && !ios.dumb && !ios.IsStdoutPipe() {
			mode = progressAlways
		}
	}
	d := &display{w: ios.ErrOut, mode: mode, interval: max(interval, minProgressInterval), width: ios.TerminalWidth,
		outOnScreen: ios.IsStdoutTTY() && ios.IsStderrTTY() || sameFile(ios.Out, ios.ErrOut), line: termbar.NewLine(false, nil)}
	if mode == progressAlways {
		d.bar = termbar.New(ios.ErrOut)
		d.notifyResize = ios.NotifyResize
		d.bar.Reflow = termbar.Reflows(os.Getenv)
		d.line = termbar.NewLine(ios.IsStderrTTY(), ios.IsForeground)
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

// stopped runs fn, which stops pace until it is continued (Ctrl-Z,
// then fg or bg), with the bar erased. Meanwhile the shell wrote lines
// of its own, and its prompt after bg: where the cursor is now is not
// known.
func (d *display) stopped(fn func()) {
	d.write(func() {
		fn()
		d.line.Lost()
	})
}

// screen returns a writer to w for use inside write's fn that tells the
// display what reaches stderr's lines: stderr, and stdout (out) when it
// goes there too.
func (d *display) screen(w io.Writer, out bool) io.Writer {
	if out && !d.outOnScreen {
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
	s.d.line.Saw(p[:n])
	return n, err
}

// lineLocked starts a line of pace's own (termbar.Line.Start). Requires
// d.mu held.
func (d *display) lineLocked() { d.line.Start(d.w, d.width) }

// add counts n more items done.
func (d *display) add(n int) {
	d.mu.Lock()
	d.done += int64(n)
	d.mu.Unlock()
}

// eraseLocked erases the bar. Requires d.mu held.
func (d *display) eraseLocked() {
	if d.bar != nil {
		d.bar.Clear(d.width())
	}
}

// resized erases the bar at once, when the terminal tells of a resize
// (the screen has its new width now, and may have another soon), and
// keeps it off until the size has held for termbar.ResizeSettle; output written
// meanwhile has nothing drawn around it.
func (d *display) resized() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.eraseLocked()
	d.line.Resized()
}

// drawLocked draws the bar with the latest status in place of the one on
// screen, on a line of its own; not while pace is in the background, nor
// while the terminal is being resized. Requires d.mu held.
func (d *display) drawLocked() {
	if d.bar == nil || d.closed || !d.status.ready {
		return
	}
	if !d.line.Ready(d.w, d.width) { // output without a final newline stays whole: the bar goes below
		return
	}
	parts := append([]progress.Part{{Text: progress.CountText(d.done, d.status.total)}}, d.status.parts...)
	d.bar.Draw(d.done, d.status.total, parts, d.width())
}

// close erases the bar for good, and ends a line that output left open,
// so that what follows (the summary) starts a line of its own.
func (d *display) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.eraseLocked()
	d.lineLocked()
	d.closed = true
}

// follow draws progress until done is closed: the bar every barEvery, a
// status line every interval (nothing for a run shorter than that). The
// ETA plans with rules and jobs, the -j the pool really runs.
func (d *display) follow(done <-chan struct{}, b throttle.Backend, t *summary.Tally, total *total, rules []throttle.Rule, jobs int, learned func() []throttle.Rule) {
	if d.mode == progressNever {
		return
	}
	every := barEvery
	if d.mode == progressLines {
		every = d.interval
	}
	p := progress.New(rules, jobs)
	p.Extra, p.Waiting = learned, d.waiting
	// The rate counts from the start, not from the first tick.
	p.Start(time.Now())
	if tot := total.get(); d.mode == progressAlways && !(d.typed && tot < 0) {
		d.mu.Lock()
		d.status = barStatus{total: tot, parts: p.Status(time.Now(), 0, t.Snapshot(), b.Stats(), tot)[1:], ready: true}
		d.drawLocked()
		d.mu.Unlock()
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var resizes chan os.Signal
	if d.notifyResize != nil {
		resizes = make(chan os.Signal, 1)
		d.notifyResize(resizes)
		defer signal.Stop(resizes)
	}
	for {
		select {
		case <-done:
			return
		case <-resizes:
			d.resized()
		case now := <-tick.C:
			st := b.Stats()
			ts := t.Snapshot()
			d.mu.Lock()
			doneN := d.done
			d.mu.Unlock()
			tot := total.get()
			if d.typed && tot < 0 {
				continue // the input has not ended: the user may be typing
			}
			parts := p.Status(now, doneN, ts, st, tot)
			d.mu.Lock()
			if d.mode == progressLines {
				if !d.closed {
					d.lineLocked()
					fmt.Fprintf(d.w, "pace: %s\n", progress.Join(parts))
				}
			} else {
				d.status = barStatus{total: tot, parts: parts[1:], ready: true}
				d.drawLocked()
			}
			d.mu.Unlock()
		}
	}
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

// displayWriter is an io.Writer that writes pace's own lines through a
// display, each on a line of its own.
type displayWriter struct {
	d *display
	w io.Writer
}

func (dw displayWriter) Write(p []byte) (n int, err error) {
	dw.d.write(func() {
		dw.d.lineLocked()
		n, err = dw.d.screen(dw.w, false).Write(p)
	})
	return n, err
}
