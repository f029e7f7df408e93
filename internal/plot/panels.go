package plot

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// headroom is how far above its largest value (or the 100% line) a
// panel's scale reaches.
const headroom = 1.15

// minSeg is the smallest height, in pixels, of a failure, retry or 429
// segment in a bar of call counts: one 429 among thousands of calls in a
// bin must still show.
const minSeg = 2

// rule writes the panel of one rule: its occupancy as a fraction of N,
// the per-bin maximum of the exact step function, under its 100% line.
func (d *drawer) rule(rule Rule, p panel) {
	fold := newBinFold(d.bins, d.run.span)
	var peak int64
	sweepOccupancy(d.run.recs, rule, func(at, used int64) {
		fold.set(at, used)
		peak = max(peak, used)
	})
	maxs := fold.finish()

	n := int64(rule.N)
	scale := max(1, float64(peak)/float64(n)) * headroom
	limitY := p.bottom - p.height()/scale
	y := func(v int64) float64 {
		if v > n {
			// A breach shows at least 2 pixels above the line, however
			// small it is next to N.
			return min(p.bottom-float64(float64(v)/float64(n)/scale*p.height()), limitY-2)
		}
		return p.bottom - float64(float64(v)/float64(n)/scale*p.height())
	}

	label := rule.label()
	d.f(`<g class="rule" data-rule="%v" data-peak="%s">`+"\n", esc(label), strconv.FormatFloat(float64(peak)/float64(n), 'g', -1, 64))
	peakFill := ""
	if peak > n {
		peakFill = ` fill="` + limitColor + `" font-weight="bold"`
	}
	d.f(`<text class="rule-head" x="%v" y="%v"><tspan class="rule-label" font-weight="bold">%v</tspan><tspan class="peak" dx="10"%s>%v</tspan></text>`+"\n",
		px(d.lay.left), px(p.head), esc(label), peakFill, esc(peakText(rule, peak)))
	d.rect("over-limit", px(d.lay.left), px(p.top), px(d.lay.plotW), px(limitY-p.top), ` fill="`+overLimitColor+`" fill-opacity="0.6"`)
	d.f(`<path class="occupancy" fill="%s" fill-opacity="0.2" stroke="%s" d="%s"/>`+"\n",
		occupancyColor, occupancyColor, d.stepPath(nil, maxs, y, p.bottom))
	if peak > n {
		d.breaches(maxs, n, p)
	}
	d.line("limit-100", px(d.lay.left), px(limitY), px(d.right()), px(limitY), ` stroke="`+limitColor+`" stroke-width="1.5"`)
	d.yAxis(limitY, "100%")
	d.yAxis(p.bottom, "0%")
	d.baseline(p)
	d.f("</g>\n")
}

// breaches writes a red mark along the top of panel p over every run of
// bins whose maximum exceeds n, so a breach can be found at a glance
// however long the run.
func (d *drawer) breaches(maxs []int64, n int64, p panel) {
	var path []byte
	for i := 0; i < len(maxs); i++ {
		if maxs[i] <= n {
			continue
		}
		j := i + 1
		for j < len(maxs) && maxs[j] > n {
			j++
		}
		path = fmt.Appendf(path, "M%v %vh%vv4h%vz", px(d.lay.left+i), px(p.top), px(j-i), px(i-j))
		i = j
	}
	d.f(`<path class="breach" fill="%s" d="%s"/>`+"\n", limitColor, path)
}

// peakText describes the largest occupancy of rule's window, such as
// "peak 5 of 5 calls (100%)" or "peak cost 130 of 100 (130%), over the
// limit".
func peakText(rule Rule, peak int64) string {
	n := int64(rule.N)
	var s string
	if rule.Cost {
		s = fmt.Sprintf("peak cost %d of %d (%s%%)", peak, n, percent(peak, n))
	} else {
		calls := "calls"
		if n == 1 {
			calls = "call"
		}
		s = fmt.Sprintf("peak %d of %d %s (%s%%)", peak, n, calls, percent(peak, n))
	}
	if peak > n {
		s += ", over the limit"
	}
	return s
}

// percent formats used/n as a percentage with no decimals, or with as
// many as it takes not to read 100 when used is not n.
func percent(used, n int64) string {
	p := float64(used) * 100 / float64(n)
	s := strconv.FormatFloat(p, 'f', 0, 64)
	for dec := 1; used != n && dec <= 15; dec++ {
		if v, _ := strconv.ParseFloat(s, 64); v != 100 {
			break
		}
		s = strconv.FormatFloat(p, 'f', dec, 64)
	}
	return s
}

// calls writes the calls panel: one tick per call when there are few
// enough, else one stacked bar of counts by outcome per bin.
func (d *drawer) calls(totals [numOutcomes]int64) {
	p := d.lay.calls
	recs := d.run.recs
	nCols := d.lay.plotW / tickCol
	mode := "ticks"
	if len(recs) > nCols {
		mode = "bins"
	}
	d.f(`<g class="calls" data-mode="%s" data-calls="%d">`+"\n", mode, len(recs))
	switch {
	case len(recs) == 0:
		d.text("panel-label", px(d.lay.left), px(p.head), "", "calls: none")
	case mode == "ticks":
		d.callTicks(totals, p, nCols)
	default:
		d.callBars(p)
	}
	d.baseline(p)
	d.f("</g>\n")
}

// callTicks draws each call as a tick in a column tickCol pixels wide;
// calls that fall in the same column are stacked in order of start, then
// outcome as in stackOrder, so the picture does not depend on the order
// of the input.
func (d *drawer) callTicks(totals [numOutcomes]int64, p panel, nCols int) {
	recs := d.run.recs
	order := make([]int, len(recs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(recs[a].start, recs[b].start), cmp.Compare(stackRank(recs[a].outcome), stackRank(recs[b].outcome)))
	})
	cols := newBinner(nCols, d.run.span)
	level := make([]int, nCols) // calls stacked so far per column
	stack := make([]int, len(recs))
	maxStack := 1
	for _, i := range order {
		c := cols.of(recs[i].start)
		stack[i] = level[c]
		level[c]++
		maxStack = max(maxStack, level[c])
	}
	unit := min(10, p.height()/float64(maxStack))
	tickH := unit
	if unit >= 3 {
		tickH = unit - 1 // a gap between stacked ticks
	}
	d.text("panel-label", px(d.lay.left), px(p.head), "", "calls: one tick per call at its admission, stacked")
	for _, o := range stackOrder {
		if totals[o] == 0 {
			continue
		}
		d.f(`<g class="outcome" data-outcome="%s" fill="%s">`+"\n", o, outcomeColors[o])
		for _, i := range order {
			if recs[i].outcome != o {
				continue
			}
			x := float64(d.lay.left + cols.of(recs[i].start)*tickCol)
			y := p.bottom - float64(float64(stack[i]+1)*unit)
			d.rect("call", px(x), px(y), tickCol-1, px(tickH), "")
		}
		d.f("</g>\n")
	}
}

// stackOrder is the order of outcomes in a bar, from the bottom: the rare
// and telling ones first, where they are easiest to see.
var stackOrder = [numOutcomes]Outcome{Refused, Failed, Retried, OK}

// stackRank returns the position of o in stackOrder.
func stackRank(o Outcome) int { return slices.Index(stackOrder[:], o) }

// callBars draws, per bin, a bar of the calls admitted in it, stacked by
// outcome. Heights are proportional to counts, except that a failure,
// retry or 429 segment is never thinner than minSeg.
func (d *drawer) callBars(p panel) {
	recs := d.run.recs
	counts := make([][numOutcomes]int64, d.bins.n)
	for i := range recs {
		counts[d.bins.of(recs[i].start)][recs[i].outcome]++
	}
	var most int64
	for _, c := range counts {
		most = max(most, c[OK]+c[Failed]+c[Retried]+c[Refused])
	}
	scale := p.height() / float64(most)
	var paths [numOutcomes][]byte
	for b, c := range counts {
		var h [numOutcomes]float64
		rest := p.height()
		for _, o := range stackOrder[:3] {
			if c[o] > 0 {
				h[o] = max(float64(float64(c[o])*scale), minSeg)
				rest -= h[o]
			}
		}
		h[OK] = min(float64(float64(c[OK])*scale), max(rest, 0))
		y := p.bottom
		for _, o := range stackOrder {
			if h[o] > 0 {
				y -= h[o]
				paths[o] = fmt.Appendf(paths[o], "M%v %vh1v%vh-1z", px(d.lay.left+b), px(y), px(h[o]))
			}
		}
	}
	bin := time.Duration(d.run.span / int64(d.bins.n))
	d.text("panel-label", px(d.lay.left), px(p.head), "", "calls per "+roundDur(bin).String()+" by outcome")
	d.yAxis(p.top, strconv.FormatInt(most, 10))
	d.yAxis(p.bottom, "0")
	for _, o := range stackOrder {
		if len(paths[o]) > 0 {
			d.f(`<g class="outcome" data-outcome="%s" fill="%s"><path class="bar" d="%s"/></g>`+"\n", o, outcomeColors[o], paths[o])
		}
	}
}

// roundDur rounds d to three significant digits.
func roundDur(d time.Duration) time.Duration {
	unit := time.Duration(1)
	for d/unit >= 1000 {
		unit *= 10
	}
	return d.Round(unit)
}

// inflight writes the panel of calls in flight: per bin, the most calls
// in flight at any instant in it.
func (d *drawer) inflight() {
	p := d.lay.inflight
	fold := newBinFold(d.bins, d.run.span)
	var peak int64
	sweepInflight(d.run.recs, d.run.ends, func(at, n int64) {
		fold.set(at, n)
		peak = max(peak, n)
	})
	maxs := fold.finish()
	scale := float64(max(peak, 1)) * headroom
	y := func(v int64) float64 { return p.bottom - float64(float64(v)/scale*p.height()) }

	d.f(`<g class="inflight" data-peak="%d">`+"\n", peak)
	d.text("panel-label", px(d.lay.left), px(p.head), "", "calls in flight (peak "+strconv.FormatInt(peak, 10)+")")
	d.f(`<path class="inflight-area" fill="%s" fill-opacity="0.25" stroke="%s" d="%s"/>`+"\n",
		inflightColor, inflightColor, d.stepPath(nil, maxs, y, p.bottom))
	if peak > 0 {
		d.yAxis(y(peak), strconv.FormatInt(peak, 10))
	}
	d.yAxis(p.bottom, "0")
	d.baseline(p)
	d.f("</g>\n")
}
