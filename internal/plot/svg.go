package plot

import (
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
)

// px is a coordinate or length in pixels. It formats (with any verb) to
// one decimal, without a trailing ".0": precise enough on screen, short,
// and the same on every platform, so golden files stay stable.
type px float64

// Format implements fmt.Formatter.
func (p px) Format(f fmt.State, _ rune) {
	var buf [32]byte
	f.Write(appendPx(buf[:0], float64(p)))
}

// appendPx appends v rounded to one decimal, as px formats it.
func appendPx(dst []byte, v float64) []byte {
	r := math.Round(v*10) / 10
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.AppendFloat(dst, r, 'f', -1, 64)
}

// esc is text to be written into an SVG element or a double-quoted
// attribute. It formats (with any verb) escaped for XML: markup
// characters become entities and characters XML does not allow become
// U+FFFD, so a label can hold anything.
type esc string

// Format implements fmt.Formatter.
func (s esc) Format(f fmt.State, _ rune) {
	xml.EscapeText(f, []byte(s)) // fmt.State's Write does not fail
}

// svg accumulates the picture. The methods are thin: each element is
// written with fmt, the formatting of numbers and text is left to px and
// esc.
type svg struct {
	b []byte
}

// f appends one formatted piece of markup.
func (s *svg) f(format string, args ...any) {
	s.b = fmt.Appendf(s.b, format, args...)
}

// text appends a <text> element with the given class at (x, y), with
// extra attributes attrs (written as they are), holding content.
func (s *svg) text(class string, x, y px, attrs, content string) {
	s.f(`<text class="%s" x="%v" y="%v"%s>%v</text>`+"\n", class, x, y, attrs, esc(content))
}

// line appends a <line> element with the given class and extra attributes.
func (s *svg) line(class string, x1, y1, x2, y2 px, attrs string) {
	s.f(`<line class="%s" x1="%v" y1="%v" x2="%v" y2="%v"%s/>`+"\n", class, x1, y1, x2, y2, attrs)
}

// rect appends a <rect> element with the given class and extra attributes.
func (s *svg) rect(class string, x, y, w, h px, attrs string) {
	s.f(`<rect class="%s" x="%v" y="%v" width="%v" height="%v"%s/>`+"\n", class, x, y, w, h, attrs)
}
