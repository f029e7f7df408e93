package plot

import (
	"bytes"
	"encoding/xml"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A node is one element of a parsed SVG picture.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Kids    []*node    `xml:",any"`
}

// parseSVG parses a picture, failing the test if it is not well-formed
// XML with an <svg> root.
func parseSVG(t *testing.T, b []byte) *node {
	t.Helper()
	var root node
	if err := xml.NewDecoder(bytes.NewReader(b)).Decode(&root); err != nil {
		t.Fatalf("parse svg: %v\n%s", err, b)
	}
	if root.XMLName.Local != "svg" || root.XMLName.Space != "http://www.w3.org/2000/svg" {
		t.Fatalf("root element = %v, want svg in the SVG namespace", root.XMLName)
	}
	return &root
}

// attr returns the value of the attribute name, or "".
func (n *node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// num returns the attribute name as a number, failing the test if it is
// not one.
func (n *node) num(t *testing.T, name string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(n.attr(name), 64)
	if err != nil {
		t.Fatalf("<%s class=%q> %s: %v", n.XMLName.Local, n.attr("class"), name, err)
	}
	return f
}

// find returns the elements under n, n included, with class c among their
// classes, in document order.
func (n *node) find(c string) []*node {
	var found []*node
	var walk func(*node)
	walk = func(m *node) {
		if slices.Contains(strings.Fields(m.attr("class")), c) {
			found = append(found, m)
		}
		for _, k := range m.Kids {
			walk(k)
		}
	}
	walk(n)
	return found
}

// one returns the only element under n with class c, failing the test if
// there is not exactly one.
func (n *node) one(t *testing.T, c string) *node {
	t.Helper()
	found := n.find(c)
	if len(found) != 1 {
		t.Fatalf("%d elements of class %q under <%s class=%q>, want 1", len(found), c, n.XMLName.Local, n.attr("class"))
	}
	return found[0]
}

// text returns the character data of n and its descendants.
func (n *node) text() string {
	var b strings.Builder
	var walk func(*node)
	walk = func(m *node) {
		b.WriteString(m.Text)
		for _, k := range m.Kids {
			walk(k)
		}
	}
	walk(n)
	return b.String()
}

// pathYs returns the y coordinates a path built by stepPath visits: the
// second number after M and every number after V.
func pathYs(t *testing.T, d string) []float64 {
	t.Helper()
	var ys []float64
	for i := 0; i < len(d); {
		cmd := d[i]
		j := i + 1
		for j < len(d) && strings.IndexByte("MHVZhvz", d[j]) < 0 {
			j++
		}
		args := strings.Fields(d[i+1 : j])
		switch {
		case cmd == 'M' && len(args) == 2:
			ys = append(ys, parseNum(t, args[1]))
		case cmd == 'V' && len(args) == 1:
			ys = append(ys, parseNum(t, args[0]))
		}
		i = j
	}
	return ys
}

func parseNum(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("path number %q: %v", s, err)
	}
	return f
}
