package runner

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Printable returns s, text a server sent (a reason phrase, an error
// body), fit to print in pace's own lines on a terminal: every rune that
// is not graphic (strconv.IsPrint) and not a space, such as ESC, BEL,
// a carriage return, C1 controls and bidirectional overrides, is written
// as strconv.Quote writes it (\x1b, \a, \r, \u202e), and so is each byte
// of invalid UTF-8 (\xff). A backslash is kept as it is: the aim is that
// the server cannot drive the terminal, not that the text can be read
// back. With lines, s may be several lines: '\n' and '\t' are kept, and
// "\r\n" is read as '\n'; otherwise they are escaped too.
func Printable(s string, lines bool) string {
	if isPlain(s, lines) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case lines && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case lines && r == '\r' && strings.HasPrefix(s[i+1:], "\n"):
			// the '\n' follows
		case shownRaw(r, size):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// shownRaw reports whether the rune r, size bytes of UTF-8, is one that
// Printable and Quote write as it is: graphic or the space
// (strconv.IsPrint), and not a byte of invalid UTF-8.
func shownRaw(r rune, size int) bool {
	return strconv.IsPrint(r) && (r != utf8.RuneError || size > 1)
}

// isPlain reports whether s holds only printable ASCII (and, with lines,
// '\n' and '\t'), which Printable returns as it is.
func isPlain(s string, lines bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c > '~' {
			if lines && (c == '\n' || c == '\t') {
				continue
			}
			return false
		}
	}
	return true
}
