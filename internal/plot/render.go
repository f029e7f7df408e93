package plot

import (
	"cmp"
	"fmt"
	"io"
	"math"
)

// MaxSize is the largest width or height of a picture, in pixels: the
// picture's size grows with its width (one bin per pixel), and 20000
// pixels is already twice what the widest screens show.
const MaxSize = 20000

// MaxRows bounds the job log rows pace plot reads (joblog.ReadAtMost),
// and so its memory (some 5 GB at the cap, measured), as pace
// audit's calls are bounded: an endless input ends with an error.
const MaxRows = 10_000_000

// Picture geometry, in pixels.
const (
	defaultWidth  = 1000
	defaultHeight = 600
	minWidth      = 300
	minHeight     = 200

	marginLeft  = 56 // room for the y labels
	marginRight = 24
	topH        = legendY + 12 // title and one row of legend
	bottomH     = 40           // tick labels and the axis title
	headH       = 16           // a panel's heading line, above its body
	gapH        = 8            // between panels
	callsH      = 60           // body of the calls panel
	inflightH   = 44           // body of the in-flight panel
	minRuleH    = 36           // smallest body of a rule's panel

	// tickCol is the width of a column of per-call ticks: calls are drawn
	// one tick each when there is at least this much room per call.
	tickCol = 4
)

// Colours. Outcomes are told apart by hue and lightness both.
var outcomeColors = [numOutcomes]string{
	OK:      "#66bd63",
	Failed:  "#b2182b",
	Retried: "#fdae61",
	Refused: "#762a83",
}

const (
	limitColor     = "#e31a1c"
	overLimitColor = "#fde0dd"
	occupancyColor = "#2166ac"
	inflightColor  = "#35978f"
	pauseColor     = "#7f7f7f"
	gridColor      = "#e6e6e6"
	axisColor      = "#555"
)

// Render writes one SVG picture of a run to w: per rule, its window
// occupancy as a fraction of its limit; the calls by outcome; the calls
// in flight; and the pauses as bands. The time axis runs from the first
// call (without calls, the first pause) to the end of the last call or
// pause; parts of pauses before it are not drawn. The size of the picture
// depends on opts and the number of rules, not on the number of calls
// (see Binning in the package doc).
//
// The rules must have N >= 1 and a positive Window, the calls known
// Outcomes. Calls and pauses may come in any order and are left
// unchanged. Render writes nothing on error, and the whole picture with
// one Write otherwise.
func Render(w io.Writer, rules []Rule, calls []Call, pauses []Pause, opts Options) error {
	if err := check(rules, calls, opts); err != nil {
		return err
	}
	run := newRun(calls, pauses)
	lay := newLayout(opts, len(rules), run.totals)
	d := &drawer{run: run, lay: lay, bins: newBinner(lay.plotW, run.span)}
	d.draw(rules, opts.Title)
	if _, err := w.Write(d.b); err != nil {
		return fmt.Errorf("plot: write svg: %w", err)
	}
	return nil
}

// check returns an error for input Render cannot draw.
func check(rules []Rule, calls []Call, opts Options) error {
	if opts.Width != 0 && opts.Width < minWidth {
		return fmt.Errorf("plot: width %d is below the minimum of %d", opts.Width, minWidth)
	}
	if opts.Height != 0 && opts.Height < minHeight {
		return fmt.Errorf("plot: height %d is below the minimum of %d", opts.Height, minHeight)
	}
	if opts.Width > MaxSize || opts.Height > MaxSize {
		return fmt.Errorf("plot: size %d×%d is above the maximum of %d×%d", opts.Width, opts.Height, MaxSize, MaxSize)
	}
	for _, r := range rules {
		if r.N < 1 {
			return fmt.Errorf("plot: rule %q: limit %d is not positive", r.label(), r.N)
		}
		if r.Window <= 0 {
			return fmt.Errorf("plot: rule %q: window %s is not positive", r.label(), r.Window)
		}
	}
	for i := range calls {
		if o := calls[i].Outcome; o >= numOutcomes {
			return fmt.Errorf("plot: call %d: unknown outcome %d", i, o)
		}
	}
	return nil
}

// A panel is one horizontal strip of the picture: a heading whose text
// sits on the baseline head, above a body from top to bottom.
type panel struct {
	head, top, bottom float64
}

// height returns the height of the panel's body.
func (p panel) height() float64 { return p.bottom - p.top }

// A layout places the panels. The plot area spans x in
// [left, left+plotW), one bin per pixel.
type layout struct {
	width, height int
	left, plotW   int
	legend        []legendItem
	rules         []panel
	calls         panel
	inflight      panel
}

// newLayout places the legend, with the outcome counts totals, under the
// title, then stacks a panel per rule, then the calls and in-flight
// panels. The rules share what height the fixed panels leave; without
// rules, the calls and in-flight panels share it.
func newLayout(opts Options, nRules int, totals [numOutcomes]int64) layout {
	lay := layout{width: cmp.Or(opts.Width, defaultWidth), height: cmp.Or(opts.Height, defaultHeight)}
	lay.left = marginLeft
	lay.plotW = lay.width - marginLeft - marginRight
	lay.legend = legendLayout(totals, marginLeft, float64(lay.width-marginRight))
	top := topH + legendRowH*lay.legend[len(lay.legend)-1].row

	fixed := float64(headH + callsH + gapH + headH + inflightH + nRules*(headH+gapH))
	spare := float64(lay.height-top-bottomH) - fixed
	ruleH, cH, iH := 0.0, float64(callsH), float64(inflightH)
	if nRules > 0 {
		ruleH = max(minRuleH, spare/float64(nRules))
	} else {
		cH += max(spare, 0) * 0.6
		iH += max(spare, 0) * 0.4
	}
	y := float64(top)
	next := func(h float64) panel {
		p := panel{head: y + headH - 4, top: y + headH, bottom: y + headH + h}
		y = p.bottom + gapH
		return p
	}
	for range nRules {
		lay.rules = append(lay.rules, next(ruleH))
	}
	lay.calls = next(cH)
	lay.inflight = next(iH)
	lay.height = max(lay.height, int(math.Ceil(lay.inflight.bottom))+bottomH)
	return lay
}
