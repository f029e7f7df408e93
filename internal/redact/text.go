package redact

import "strings"

// Text returns s, free text such as an error message, with every URL in
// it redacted as RawURL does. A URL is found by its "://": it starts with
// the scheme before that and ends at the next space, control character,
// quote, '<', '>' or '`', less any '.', ',', ':', ';', '!', '?' or
// unmatched ')' at its end. When a '"' opens it, as in the messages of
// net/http and net/url (Get "https://...": EOF), it ends at the closing
// '"' instead, so that a quoted URL holding a space is redacted whole.
//
// Text does not hide known secrets; String does.
func (r *Redactor) Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i
		for start > 0 && isSchemeChar(s[start-1]) {
			start--
		}
		end := urlEnd(s, start, i+3)
		b.WriteString(s[:start])
		b.WriteString(r.RawURL(s[start:end]))
		s = s[end:]
	}
}

// urlEnd returns the index in s where the URL that starts at start ends;
// its authority starts at from.
func urlEnd(s string, start, from int) int {
	if start > 0 && s[start-1] == '"' {
		if end := closingQuote(s, from); end >= 0 {
			return end
		}
	}
	end := from
	for end < len(s) && !isURLStop(s[end]) {
		end++
	}
	// Punctuation that ends a sentence or clause ("fetch <url>: EOF",
	// "(see <url>)") is prose, not URL, unless the URL opened a bracket.
	// A secret value that really ends in one shows only that byte.
	paren := strings.Contains(s[start:end], "(")
	for end > from && (strings.IndexByte(".,:;!?", s[end-1]) >= 0 || s[end-1] == ')' && !paren) {
		end--
	}
	return end
}

// closingQuote returns the index of the first '"' from i on that a
// backslash does not escape, as strconv.Quote writes them, or -1 if a
// line ends or s does before one.
func closingQuote(s string, i int) int {
	for ; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		case '\n':
			return -1
		}
	}
	return -1
}

// isSchemeChar reports whether c may appear in a URL scheme.
func isSchemeChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// isURLStop reports whether c ends a URL in free text.
func isURLStop(c byte) bool {
	return c <= ' ' || c == 0x7f || c == '"' || c == '\'' || c == '<' || c == '>' || c == '`'
}
