package plot

import (
	"strconv"
	"unicode/utf8"
)

// Legend geometry: the baseline of the first row, and the row height.
const (
	legendY    = 40
	legendRowH = 16
)

// A legendItem is one entry of the legend, placed: a swatch at x on row
// row, then its label.
type legendItem struct {
	key   string // the data-key attribute: an Outcome's name, "pause" or "limit"
	label string
	fill  string // the swatch's fill attributes; "" draws the limit line
	x     float64
	row   int
}

// legendLayout returns the legend: the outcomes with their counts, the
// pause band and the limit line, placed left to right from left and
// wrapped to a new row rather than run past right.
func legendLayout(totals [numOutcomes]int64, left, right float64) []legendItem {
	var items []legendItem
	for o := range numOutcomes {
		items = append(items, legendItem{
			key:   o.String(),
			label: legendNames[o] + " " + strconv.FormatInt(totals[o], 10),
			fill:  ` fill="` + outcomeColors[o] + `"`,
		})
	}
	items = append(items,
		legendItem{key: "pause", label: "server pause", fill: ` fill="` + pauseColor + `" fill-opacity="0.3"`},
		legendItem{key: "limit", label: "limit (100%)"})
	x, row := left, 0
	for i := range items {
		w := 16 + textWidth(items[i].label)
		if x > left && x+w > right {
			x, row = left, row+1
		}
		items[i].x, items[i].row = x, row
		x += w + 14
	}
	return items
}

// textWidth estimates the width of s at the default font size: there are
// no font metrics to hand, and the legend only needs to avoid overlaps.
func textWidth(s string) float64 { return 6.5 * float64(utf8.RuneCountInString(s)) }

// legend writes the legend items.
func (d *drawer) legend(items []legendItem) {
	d.f(`<g class="legend">` + "\n")
	for _, it := range items {
		x, y := it.x, float64(legendY+legendRowH*it.row)
		d.f(`<g class="legend-item" data-key="%s">`+"\n", it.key)
		if it.fill != "" {
			d.rect("swatch", px(x), px(y-9), 11, 10, it.fill)
		} else {
			d.line("swatch", px(x), px(y-4), px(x+12), px(y-4), ` stroke="`+limitColor+`" stroke-width="2"`)
		}
		d.text("legend-label", px(x+16), px(y), "", it.label)
		d.f("</g>\n")
	}
	d.f("</g>\n")
}
