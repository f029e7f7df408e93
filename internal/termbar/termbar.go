// Package termbar draws pace's progress bar on a terminal, with
// github.com/schollz/progressbar/v3, in place and never wider than the
// terminal (docs/design.md, "The progress bar").
package termbar

import (
	"io"

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
	w     *gate
	pb    *progressbar.ProgressBar
	max   int64 // the total the bar was made for; -1: a spinner
	drawn bool  // the bar is on screen
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
// columns, never the last free columns. The cursor is at the start of a
// line the bar may have for itself.
func (b *Bar) Draw(done, total int64, parts []progress.Part, cols int) {
	if total < 1 {
		total = -1
	}
	if total != b.max {
		b.Clear()
		b.reset(total)
	}
	overhead := barOverhead
	if total < 0 {
		overhead = spinnerOverhead
	}
	text, cells, ok := progress.Fit(parts, cols-freeCols, overhead, total > 0)
	if !ok {
		b.Clear()
		return
	}
	if total > 0 {
		b.pb.Set64(min(done, total)) // renders, into the closed gate
		if b.pb.IsFinished() {
			// The library draws nothing more once full: the run is
			// ending, the bar goes.
			b.Clear()
			return
		}
	}
	progressbar.OptionSetWidth(cells)(b.pb)
	progressbar.OptionSetDescription(text)(b.pb)
	b.w.open = true
	b.pb.RenderBlank()
	b.w.open = false
	b.drawn = true
}

// Clear erases the bar, leaving the cursor at the start of its line.
func (b *Bar) Clear() {
	if !b.drawn {
		return
	}
	b.w.open = true
	b.pb.Clear()
	b.w.open = false
	b.drawn = false
}
