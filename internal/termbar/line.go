package termbar

import (
	"bytes"
	"io"
	"strings"
	"time"
)

// ResizeSettle is how long a terminal's size must hold after a resize
// before a bar is drawn again. A terminal may tell of its size late: tmux
// re-wraps its screen at once but tells a program of at most one resize
// every 250 ms, so that while a window is dragged the size read is not
// the screen's. A bar drawn or erased for that size would leave pieces of
// itself on the screen, or erase output above it.
const ResizeSettle = 500 * time.Millisecond

// Line keeps track of where the cursor is on a terminal's line, for a
// program that writes lines of its own (a bar, status lines) among output
// it does not control: output that does not end in a newline is never
// drawn over. It is not safe for concurrent use.
type Line struct {
	// OnTerminal: the writer is a terminal that shows a bar, where the
	// cursor's column may be unknown and escape sequences matter.
	OnTerminal bool
	// Foreground, if set, reports whether the program is in the
	// foreground of the terminal; a bar is drawn only then.
	Foreground func() bool

	midLine bool // the cursor follows output that did not end in a newline
	// unsure: where the cursor is on the line is not known, as when the
	// program starts (a shell's printf 'prompt> ' may have left it
	// mid-line) or is continued after Ctrl-Z; the next line then starts
	// with Start's fill, without which a bar's "\r" would draw over what
	// is there. Only OnTerminal.
	unsure bool
	// escaped: output since the last line of the program's own held an
	// escape sequence, which may be unfinished.
	escaped bool
	// background: the program was in the background at the last Ready,
	// which drew nothing.
	background bool
	resizedAt  time.Time // the terminal's last resize (Resized)
}

// NewLine returns a Line for a writer that is a terminal showing a bar if
// onTerminal; the cursor's column is not known at first.
func NewLine(onTerminal bool, foreground func() bool) *Line {
	return &Line{OnTerminal: onTerminal, Foreground: foreground, unsure: onTerminal}
}

// Saw notes that p reached the screen.
func (l *Line) Saw(p []byte) {
	if len(p) > 0 {
		l.midLine = p[len(p)-1] != '\n'
		l.unsure = false
		l.escaped = l.escaped || bytes.IndexByte(p, 0x1b) >= 0
	}
}

// Lost says that others wrote to the terminal meanwhile (the shell, while
// the program was stopped): where the cursor is is not known.
func (l *Line) Lost() { l.midLine, l.unsure = false, l.OnTerminal }

// Start starts a line of the program's own on w, width() columns wide: it
// ends the line that output left open, if any. Where the cursor is not
// known, it fills the row with spaces and returns: from the row's first
// column the cursor stays on it (a terminal holds a full row's wrap until
// the next character), from any other it wraps to the next row, below
// what was left there (zsh's PROMPT_SP does the same).
func (l *Line) Start(w io.Writer, width func() int) {
	if l.escaped && l.OnTerminal {
		// Output that wrote an escape sequence may have left one open
		// (a body cut short, a job killed while writing one): the
		// terminal would take what comes next for the rest of it, and a
		// bar's erase would then erase that output's line. CAN ends any
		// sequence, and is nothing otherwise.
		io.WriteString(w, "\x18")
	}
	l.escaped = false
	switch {
	case l.midLine:
		io.WriteString(w, "\n")
	case l.unsure:
		io.WriteString(w, strings.Repeat(" ", width())+"\r")
	}
	l.midLine, l.unsure = false, false
}

// Resized notes that the terminal told of a resize: no bar is drawn until
// the size has held for ResizeSettle.
func (l *Line) Resized() { l.resizedAt = time.Now() }

// Ready starts the bar's line (Start) and reports whether a bar may be
// drawn there now: not while the program is in the background (pace run
// ... &, or bg after Ctrl-Z: the shell and the user have the terminal,
// and output is left as it ends, as any program's in the background), nor
// while the terminal is being resized (the line is the bar's all the
// same, so that each output keeps a line of its own).
func (l *Line) Ready(w io.Writer, width func() int) bool {
	if l.Foreground != nil && !l.Foreground() {
		l.background = true
		return false
	}
	if l.background {
		// Back in the foreground (fg): the shell has written its lines.
		l.background = false
		l.Lost()
	}
	l.Start(w, width)
	return time.Since(l.resizedAt) >= ResizeSettle
}
