// Package termbar draws pace's progress bar on a terminal, with
// github.com/schollz/progressbar/v3, in place and never wider than the
// terminal (docs/design.md, "The progress bar").
package termbar

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"

	"github.com/pace-cli/pace/internal/progress"
)

// Bar draws the progress bar on a terminal with progressbar/v3, and
// makes up for what that library does not do (docs/design.md, "The
// progress bar"):
//
//   - It draws only when pace says so. The library renders from Add and
//     Describe too, and RenderBlank is throttled; so the library writes
//     through a gate that pace opens for one RenderBlank at a time, with
//     OptionThrottle(0), and pace's own ticker decides when to redraw.
//   - Clear reads the bar's state without the bar's lock, and options are
//     set after creation without it: the caller (pace's display) makes
//     every call under its own lock, and the library runs no goroutine of its
//     own (spinner interval 0).
//   - With an unknown total the library's count wraps modulo the bar's
//     width: pace draws a spinner then, and makes a new bar when the total
//     becomes known.
//   - The library fits the bar to the terminal only when its writer is an
//     *os.File, and never cuts the text: pace reads the width at each draw
//     and cuts the text to fit it.
//
// It is not safe for concurrent use: its caller serialises every call.
type Bar struct {
	// Reflow says the terminal re-wraps lines when it is narrowed (tmux,
	// VTE, most terminals): a bar drawn wider than the terminal is now
	// then spans several rows, the cursor on the last (see Reflows).
	Reflow bool

	w     *gate
	pb    *progressbar.ProgressBar
	max   int64 // the total the bar was made for; -1: a spinner
	drawn bool  // the bar is on screen
	width int   // the columns the bar on screen was drawn over
}

// gate passes writes to w only while open, and drops them otherwise.
type gate struct {
	w    io.Writer
	open bool
}

func (g *gate) Write(p []byte) (int, error) {
	if !g.open {
		return len(p), nil
	}
	return g.w.Write(p)
}

// The bar's layout: "  42% [████······] 12/30 done, ..." or, with an
// unknown total, "⠙  12 done, ...". The overheads are the columns
// progressbar/v3 adds around the text: the percentage, the brackets and
// the spaces; a test measures them against what it renders.
const (
	barOverhead     = 11 // "%4d%% " "[" "]" " " " " text " "
	spinnerOverhead = 4  // spinner "  " text " "
)

// freeCols is how many columns the bar leaves free at the right: the
// terminal echoes ^C, ^Z or ^\ after it, and an echo that reached the
// last column would wrap, the bar left on the line above the one erased.
const freeCols = 3

// barTheme draws with the same cells as pace's status before.
var barTheme = progressbar.Theme{Saucer: "█", SaucerPadding: "·", BarStart: "[", BarEnd: "]"}

// New returns a bar that draws on w, a terminal, when told to.
func New(w io.Writer) *Bar { return &Bar{w: &gate{w: w}, max: -2} }

// reset makes a new bar for total items (-1: unknown, a spinner).
func (b *Bar) reset(total int64) {
	b.pb = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(b.w),
		progressbar.OptionThrottle(0),
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetElapsedTime(false),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetSpinnerChangeInterval(0),
		progressbar.OptionSetTheme(barTheme),
	)
	b.max = total
}

// Draw draws the bar in place of the one on screen, if any: done of
// total items (total < 1: unknown) and the status parts that fit in cols
// columns, never the last free columns. The first part, the count, is
// shown whole or not at all: where the bar's decoration leaves no room
// for it, the text is drawn alone. The cursor is at the start of a
// line the bar may have for itself.
func (b *Bar) Draw(done, total int64, parts []progress.Part, cols int) {
	if total < 1 {
		total = -1
	}
	if total != b.max || b.rowsAbove(cols) > 0 {
		b.Clear(cols)
	}
	if total != b.max {
		b.reset(total)
	}
	overhead := barOverhead
	if total < 0 {
		overhead = spinnerOverhead
	}
	text, cells, ok := progress.Fit(parts, cols-freeCols, overhead, total > 0)
	// Too narrow for the bar's decoration beside the whole count (a
	// percentage and brackets take 11 columns): the text alone, so that
	// the count is never cut ("1234/…" beside a bar of no cells).
	plain := !ok || total > 0 && cells == 0 || !wholeCount(text, parts)
	if plain {
		if text, _, ok = progress.Fit(parts, cols-freeCols, 0, false); !ok || !wholeCount(text, parts) {
			b.Clear(cols)
			return
		}
	}
	if total > 0 {
		b.pb.Set64(min(done, total)) // renders, into the closed gate
		if b.pb.IsFinished() {
			// The library draws nothing more once full: the run is
			// ending, the bar goes.
			b.Clear(cols)
			return
		}
	}
	if plain {
		b.w.open = true
		fmt.Fprintf(b.w, "\r%s\x1b[0K", text)
		b.w.open = false
		b.drawn, b.width = true, utf8.RuneCountInString(text)
		return
	}
	progressbar.OptionSetWidth(cells)(b.pb)
	progressbar.OptionSetDescription(text)(b.pb)
	b.w.open = true
	b.pb.RenderBlank()
	b.w.open = false
	b.drawn, b.width = true, overhead+cells+utf8.RuneCountInString(text)
}

// wholeCount reports whether text, fitted from parts, shows the first
// part (the count) whole.
func wholeCount(text string, parts []progress.Part) bool {
	return len(parts) == 0 || strings.HasPrefix(text, parts[0].Text)
}

// Clear erases the bar from a terminal cols wide now, leaving the cursor
// at the start of its line.
func (b *Bar) Clear(cols int) {
	if !b.drawn {
		return
	}
	b.w.open = true
	if up := b.rowsAbove(cols); up > 0 {
		// Erasing the cursor's row would leave the rest above it.
		fmt.Fprintf(b.w, "\r\x1b[%dA\x1b[J", up)
	} else {
		// What the library's Clear writes with ANSI codes, but also
		// after a draw of the text alone, which the library knows
		// nothing of.
		io.WriteString(b.w, "\x1b[2K\r")
	}
	b.w.open = false
	b.drawn = false
}

// rowsAbove returns how many rows above the cursor's hold a part of the
// bar on screen, now that the terminal is cols wide: a terminal that
// reflows has re-wrapped a bar drawn wider.
func (b *Bar) rowsAbove(cols int) int {
	if !b.drawn || !b.Reflow || cols < 1 || b.width <= cols {
		return 0
	}
	return (b.width - 1) / cols
}

// Reflows reports whether the terminal that the environment (getenv)
// tells of re-wraps its lines when narrowed. Most do (tmux, VTE's,
// kitty, iTerm2, Terminal.app, Windows Terminal); xterm (XTERM_VERSION)
// and the Linux console (TERM=linux) cut them instead, and erasing rows
// above the cursor's there would erase output. tmux reflows whatever
// terminal it runs in.
func Reflows(getenv func(string) string) bool {
	return getenv("TMUX") != "" || getenv("XTERM_VERSION") == "" && getenv("TERM") != "linux"
}
