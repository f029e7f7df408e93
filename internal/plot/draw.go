package plot

import (
	"fmt"
	"time"
)

// A drawer writes the picture of one run, part by part, into its svg.
type drawer struct {
	svg
	run  *run
	lay  layout
	bins binner // one bin per pixel of the plot area
}

// draw writes the whole picture. Pauses and grid lines come first, so
// that the data is drawn over them.
func (d *drawer) draw(rules []Rule, title string) {
	lay := d.lay
	d.f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		lay.width, lay.height, lay.width, lay.height)
	d.rect("background", 0, 0, px(lay.width), px(lay.height), ` fill="#fff"`)
	if title != "" {
		d.text("title", px(lay.left), 20, ` font-size="14" font-weight="bold"`, title)
	}
	d.legend(lay.legend)
	d.pauses()
	d.axis()
	for i, r := range rules {
		d.rule(r, lay.rules[i])
	}
	d.calls(d.run.totals)
	d.inflight()
	d.f("</svg>\n")
}

// xOf returns the x coordinate of the instant at.
//
// Here and wherever a product is added to something, an explicit
// float64() rounds the product first. Without it the compiler may fuse
// the two into one FMA instruction on some platforms (arm64, ppc64,
// s390x), and the golden files would not match there.
func (d *drawer) xOf(at int64) float64 {
	return float64(d.lay.left) + float64(float64(at)*float64(d.lay.plotW))/float64(d.run.span)
}

// right returns the x coordinate of the right edge of the plot area.
func (d *drawer) right() float64 { return float64(d.lay.left + d.lay.plotW) }

// plotTop and plotBottom return the top of the first panel's heading and
// the bottom of the last panel.
func (d *drawer) plotTop() float64 {
	if len(d.lay.rules) > 0 {
		return d.lay.rules[0].top - headH
	}
	return d.lay.calls.top - headH
}

func (d *drawer) plotBottom() float64 { return d.lay.inflight.bottom }

// pauses writes the pauses as grey bands across all panels, at least one
// pixel wide; bands that touch on screen are merged, so there are never
// more of them than pixels.
func (d *drawer) pauses() {
	top, bottom := d.plotTop(), d.plotBottom()
	d.f(`<g class="pauses" fill="%s" fill-opacity="0.3">`+"\n", pauseColor)
	var x0, x1 float64
	have := false
	flush := func() {
		if have {
			d.rect("pause", px(x0), px(top), px(x1-x0), px(bottom-top), "")
		}
	}
	for _, p := range d.run.pauses {
		a, b := d.xOf(p[0]), d.xOf(p[1])
		b = min(max(b, a+1), d.right())
		a = min(a, b-1)
		if have && a <= x1 {
			x1 = max(x1, b)
			continue
		}
		flush()
		x0, x1, have = a, b, true
	}
	flush()
	d.f("</g>\n")
}

// axis writes the time axis: grid lines through all panels and labelled
// ticks below them.
func (d *drawer) axis() {
	span := time.Duration(d.run.span)
	step := tickStep(span, max(d.lay.plotW/80, 1))
	top, bottom := d.plotTop(), d.plotBottom()
	d.f(`<g class="axis-x">` + "\n")
	for k := range span/step + 1 {
		t := k * step
		x := px(d.xOf(int64(t)))
		d.line("grid", x, px(top), x, px(bottom), ` stroke="`+gridColor+`"`)
		d.text("tick-label", x, px(bottom+14), ` text-anchor="middle"`, tickLabel(t, step, span))
	}
	title := "time since the first call"
	if len(d.run.recs) == 0 {
		title = "time since the first pause"
	}
	if !d.run.origin.IsZero() {
		title += " (" + d.run.origin.UTC().Format("2006-01-02 15:04:05.000 UTC") + ")"
	}
	d.text("axis-title", px(float64(d.lay.left)+float64(d.lay.plotW)/2), px(bottom+32), ` text-anchor="middle"`, title)
	d.f("</g>\n")
}

// stepPath appends to dst the d attribute of a closed path that follows
// vals, one value per bin from the left edge of the plot area, as steps
// mapped by y, and returns along the baseline base.
func (d *drawer) stepPath(dst []byte, vals []int64, y func(int64) float64, base float64) []byte {
	left := float64(d.lay.left)
	dst = fmt.Appendf(dst, "M%v %vV%v", px(left), px(base), px(y(vals[0])))
	for i := 1; i < len(vals); i++ {
		if vals[i] != vals[i-1] {
			dst = fmt.Appendf(dst, "H%vV%v", px(left+float64(i)), px(y(vals[i])))
		}
	}
	return fmt.Appendf(dst, "H%vV%vZ", px(left+float64(len(vals))), px(base))
}

// yAxis writes a label at height y on the left of the plot area.
func (d *drawer) yAxis(y float64, label string) {
	d.text("axis-y", px(d.lay.left-4), px(y+4), ` text-anchor="end"`, label)
}

// baseline writes the zero line of panel p.
func (d *drawer) baseline(p panel) {
	d.line("baseline", px(d.lay.left), px(p.bottom), px(d.right()), px(p.bottom), ` stroke="`+axisColor+`"`)
}
