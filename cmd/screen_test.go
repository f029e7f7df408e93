package cmd

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// screen is a minimal VT100 model: what a terminal of a given width shows
// after a byte stream, with its scrollback kept whole. It knows what
// pace and the programs in the tests write: printable runes (one cell
// each), CR, LF, BS, TAB, and the CSI sequences K (erase in line), G
// (column), C and D (forward, back), A and B (up, down), F (up, column 1),
// J (erase below),
// m (colours, ignored) and ?25l/?25h (cursor shown or hidden, ignored),
// OSC strings (ESC ], shown nothing of, ended by BEL or ESC \, and as
// tmux and xterm read them, by any other escape), and CAN, which ends any
// sequence.
// LF also returns the cursor to the first column, as a terminal does with
// its default onlcr setting.
// Anything else is an error, so that a test never passes by ignoring what
// a real terminal would do. Writing past the last column wraps to the
// next line, as xterm does (the cursor waits at the margin until the next
// rune), and is counted: pace's own lines must never wrap.
type screen struct {
	cols    int
	lines   [][]rune
	row     int
	col     int
	pending bool // at the right margin, a rune would wrap first
	// wraps counts runes that wrapped to a new line; wrapped holds the
	// text of the lines they wrapped from.
	wraps   int
	wrapped []string
	errs    []string
	// cont marks the rows a rune wrapped to: the rest of the line above,
	// which a terminal that reflows joins to it when resized.
	cont map[int]bool
	// osc: inside an OSC string, whose bytes are shown nothing of, until
	// its end (which may come in a later write).
	osc bool
}

func newScreen(cols int) *screen {
	return &screen{cols: cols, lines: [][]rune{nil}, cont: map[int]bool{}}
}

func (s *screen) line() []rune {
	for len(s.lines) <= s.row {
		s.lines = append(s.lines, nil)
	}
	return s.lines[s.row]
}

func (s *screen) put(r rune) {
	if s.pending {
		s.wraps++
		s.wrapped = append(s.wrapped, string(s.line()))
		s.row++
		s.col = 0
		s.pending = false
		s.cont[s.row] = true
	}
	l := s.line()
	for len(l) <= s.col {
		l = append(l, ' ')
	}
	l[s.col] = r
	s.lines[s.row] = l
	if s.col == s.cols-1 {
		s.pending = true
	} else {
		s.col++
	}
}

// eraseLine erases from from to to (exclusive) on the cursor's line.
func (s *screen) eraseLine(from, to int) {
	l := s.line()
	for i := from; i < to && i < len(l); i++ {
		l[i] = ' '
	}
}

// Write feeds p to the screen.
func (s *screen) Write(p []byte) (int, error) {
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRune(p[i:])
		if s.osc {
			switch {
			case r == 0x07, r == 0x18, r == 0x1a:
				s.osc = false
			case r == 0x1b:
				s.osc = false
				if i+1 < len(p) && p[i+1] == '\\' {
					n = 2
				} else {
					continue // another escape ends it, and is read
				}
			}
			i += n
			continue
		}
		switch {
		case r == 0x18, r == 0x1a: // CAN, SUB: nothing outside a sequence
		case r == 0x1b && i+1 < len(p) && p[i+1] == ']':
			s.osc, n = true, 2
		case r == '\r':
			s.col, s.pending = 0, false
		case r == '\n': // as a terminal with onlcr shows it (the default)
			s.row, s.col = s.row+1, 0
			s.pending = false
			s.line()
		case r == '\b':
			s.col, s.pending = max(s.col-1, 0), false
		case r == '\t':
			s.col, s.pending = min((s.col/8+1)*8, s.cols-1), false
		case r == 0x07: // bell
		case r == 0x1b:
			m := i + 1
			if m < len(p) && p[m] == '[' {
				j := m + 1
				for j < len(p) && (p[j] >= '0' && p[j] <= '9' || p[j] == ';' || p[j] == '?') {
					j++
				}
				if j >= len(p) {
					s.errs = append(s.errs, fmt.Sprintf("cut escape sequence %q", p[i:]))
					return len(p), nil
				}
				s.csi(string(p[m+1:j]), p[j])
				n = j + 1 - i
			} else {
				s.errs = append(s.errs, fmt.Sprintf("unknown escape %q", p[i:min(i+4, len(p))]))
			}
		case r < 0x20:
			s.errs = append(s.errs, fmt.Sprintf("control character %q", r))
		default:
			s.put(r)
		}
		i += n
	}
	return len(p), nil
}

// csi runs the control sequence ESC [ params final.
func (s *screen) csi(params string, final byte) {
	arg := func(def int) int {
		if params == "" {
			return def
		}
		n, err := strconv.Atoi(params)
		if err != nil {
			s.errs = append(s.errs, fmt.Sprintf("CSI %q%c: bad parameter", params, final))
			return def
		}
		return n
	}
	s.pending = false
	switch final {
	case 'K':
		switch arg(0) {
		case 0:
			s.eraseLine(s.col, len(s.line()))
		case 1:
			s.eraseLine(0, s.col+1)
		case 2:
			s.eraseLine(0, len(s.line()))
		}
	case 'J': // erase below (0) only: what pace writes
		if arg(0) != 0 {
			s.errs = append(s.errs, fmt.Sprintf("CSI %s%c: only 0 is known", params, final))
		}
		s.eraseLine(s.col, len(s.line()))
		s.lines = s.lines[:s.row+1]
		for r := range s.cont {
			if r > s.row {
				delete(s.cont, r)
			}
		}
	case 'G':
		s.col = min(max(arg(1), 1), s.cols) - 1
	case 'C':
		s.col = min(s.col+max(arg(1), 1), s.cols-1)
	case 'D':
		s.col = max(s.col-max(arg(1), 1), 0)
	case 'A':
		s.row = max(s.row-max(arg(1), 1), 0)
	case 'B':
		s.row += max(arg(1), 1)
	case 'F':
		s.row, s.col = max(s.row-max(arg(1), 1), 0), 0
	case 'm':
	case 'l', 'h':
		if params != "?25" {
			s.errs = append(s.errs, fmt.Sprintf("unknown mode CSI %s%c", params, final))
		}
	default:
		s.errs = append(s.errs, fmt.Sprintf("unknown CSI %q%c", params, final))
	}
}

// text returns the screen's lines, trailing spaces and empty last lines
// trimmed.
func (s *screen) text() []string {
	out := make([]string, len(s.lines))
	for i, l := range s.lines {
		out[i] = strings.TrimRight(string(l), " ")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// resize makes the screen cols wide. A terminal that reflows (tmux, VTE)
// joins the rows a line wrapped over and wraps it again at the new width,
// the cursor kept at its place in its line; one that does not (xterm)
// keeps the rows and moves the cursor in from the right.
func (s *screen) resize(cols int, reflow bool) {
	old := s.cols
	s.cols = cols
	if !reflow {
		s.col, s.pending = min(s.col, cols-1), false
		return
	}
	var lines [][]rune
	var cont []bool
	row, col, pending := 0, 0, false
	for r := 0; r < len(s.lines); {
		start := r
		var l []rune
		for {
			l = append(l, s.lines[r]...)
			if r+1 >= len(s.lines) || !s.cont[r+1] {
				break
			}
			for len(l) < (r+1-start)*old { // a wrapped row is full
				l = append(l, ' ')
			}
			r++
		}
		cursor := -1
		if s.row >= start && s.row <= r {
			cursor = (s.row-start)*old + s.col
			if s.pending {
				cursor++
			}
		}
		l = []rune(strings.TrimRight(string(l), " "))
		first := len(lines)
		for i := 0; i == 0 || i < len(l); i += cols {
			lines = append(lines, l[i:min(i+cols, len(l))])
			cont = append(cont, i > 0)
		}
		if cursor >= 0 {
			row, col = first+cursor/cols, cursor%cols
			if cursor > 0 && cursor%cols == 0 && cursor >= len(l) {
				row, col, pending = row-1, cols-1, true
			}
		}
		r++
	}
	s.lines, s.row, s.col, s.pending = lines, row, col, pending
	s.cont = map[int]bool{}
	for i, c := range cont {
		if c {
			s.cont[i] = true
		}
	}
	s.line()
}
