package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
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

// resizeSettle is how long the terminal's size must hold after a resize
// before the bar is drawn again. A terminal may tell pace of its size late:
// tmux re-wraps its screen at once but tells a program of at most one
// resize every 250 ms, so that while a window is dragged the size pace
// reads is not the screen's. A bar drawn or erased for that size would
// leave pieces of itself on the screen, or erase output above it.
const resizeSettle = 500 * time.Millisecond

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
	// foreground, if set, reports whether pace is in the foreground of
	// the terminal (IOStreams.IsForeground); the bar is drawn only then.
	foreground func() bool

	mu      sync.Mutex
	bar     *termbar.Bar // nil unless mode is progressAlways
	midLine bool         // the screen's cursor follows output that did not end in a newline
	status  barStatus
	done    int64 // items done
	closed  bool

	// resizedAt is when the terminal told of its last resize: the bar
	// is not drawn until resizeSettle after it.
	resizedAt time.Time
	// background: pace was in the background at the last draw, which
	// drew nothing.
	background bool

	// unsure: where the cursor is on the terminal's line is not known,
	// as when pace starts (a shell's printf 'prompt> ' may have left it
	// mid-line) or is continued after Ctrl-Z; pace's next line then
	// starts with lineLocked's fill, without which a bar's "\r" would
	// draw over what is there. Only on a terminal that shows a bar
	// (onTerminal).
	unsure, onTerminal bool
	// escaped: output since pace's last line held an escape sequence,
	// which may be unfinished.
	escaped bool
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
// dumb), status lines elsewhere.
func newDisplay(ios *IOStreams, mode string, interval time.Duration) *display {
	if mode == progressAuto {
		mode = progressLines
		if ios.IsStderrTTY() && !ios.dumb {
			mode = progressAlways
		}
	}
	d := &display{w: ios.ErrOut, mode: mode, interval: max(interval, minProgressInterval), width: ios.TerminalWidth,
		outOnScreen: ios.IsStdoutTTY() && ios.IsStderrTTY() || sameFile(ios.Out, ios.ErrOut)}
	if mode == progressAlways {
		d.bar = termbar.New(ios.ErrOut)
		d.notifyResize, d.foreground = ios.NotifyResize, ios.IsForeground
		d.bar.Reflow = termbar.Reflows(os.Getenv)
		d.onTerminal = ios.IsStderrTTY()
		d.unsure = d.onTerminal
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
		d.midLine, d.unsure = false, d.onTerminal
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
	s.d.sawLocked(p[:n])
	return n, err
}

// sawLocked notes that p reached the screen. Requires d.mu held.
func (d *display) sawLocked(p []byte) {
	if len(p) > 0 {
		d.midLine = p[len(p)-1] != '\n'
		d.unsure = false
		d.escaped = d.escaped || bytes.IndexByte(p, 0x1b) >= 0
	}
}

// lineLocked starts a line of pace's own: it ends the line that output
// left open, if any. Where the cursor is not known (unsure), it fills
// the row with spaces and returns: from the row's first column the
// cursor stays on it (a terminal holds a full row's wrap until the next
// character), from any other it wraps to the next row, below what was
// left there (zsh's PROMPT_SP does the same). Requires d.mu held.
func (d *display) lineLocked() {
	if d.escaped && d.onTerminal {
		// Output that wrote an escape sequence may have left one open
		// (a body cut short, a job killed while writing one): the
		// terminal would take what pace writes next for the rest of it,
		// and the bar's erase would then erase that output's line. CAN
		// ends any sequence, and is nothing otherwise.
		io.WriteString(d.w, "\x18")
	}
	d.escaped = false
	switch {
	case d.midLine:
		io.WriteString(d.w, "\n")
	case d.unsure:
		io.WriteString(d.w, strings.Repeat(" ", d.width())+"\r")
	}
	d.midLine, d.unsure = false, false
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
		d.bar.Clear(d.width())
	}
}

// resized erases the bar at once, when the terminal tells of a resize
// (the screen has its new width now, and may have another soon), and
// keeps it off until the size has held for resizeSettle; output written
// meanwhile has nothing drawn around it.
func (d *display) resized() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.eraseLocked()
	d.resizedAt = time.Now()
}

// drawLocked draws the bar with the latest status in place of the one on
// screen, on a line of its own; not while pace is in the background, nor
// while the terminal is being resized. Requires d.mu held.
func (d *display) drawLocked() {
	if d.bar == nil || d.closed || !d.status.ready {
		return
	}
	if d.foreground != nil && !d.foreground() {
		// In the background (pace run ... &, or bg after Ctrl-Z) the
		// shell and the user have the terminal: nothing is drawn, and
		// output is left as it ends, as any program's in the background.
		d.background = true
		return
	}
	if d.background {
		// Back in the foreground (fg): the shell has written its lines.
		d.background, d.midLine, d.unsure = false, false, d.onTerminal
	}
	d.lineLocked() // output without a final newline stays whole: the bar goes below
	if time.Since(d.resizedAt) < resizeSettle {
		return // the line is the bar's all the same: each output keeps a line of its own
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
