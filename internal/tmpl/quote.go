package tmpl

import "strings"

// quoting says how a value is written into a template.
type quoting uint8

const (
	raw      quoting = iota // as it is: no shell reads it
	asWord                  // unquoted in a script: a quoted word of its own
	inSingle                // between single quotes in a script
	inDouble                // between double quotes in a script
)

// apply returns s written as q says, so that a POSIX shell reads it back
// as exactly s where q applies.
func (q quoting) apply(s string) string {
	switch q {
	case asWord:
		return quoteWord(s)
	case inSingle:
		// Close the quotes, write an escaped quote, reopen them.
		return strings.ReplaceAll(s, "'", `'\''`)
	case inDouble:
		return escapeDouble(s)
	}
	return s
}

// quoteWord returns s quoted as one shell word: in double quotes for a
// string with a single quote and nothing that double quotes expand ("it's"
// reads better than the single-quoted form), in single quotes otherwise.
//
// Even a string that no shell treats specially is quoted: next to the
// template's own text a bare word can change meaning, as 2 before >
// (a file descriptor), root after ~ (a home directory), NAME=value at the
// start of a command (an assignment) or if in command position (a reserved
// word) do.
func quoteWord(s string) string {
	if strings.Contains(s, "'") && !strings.ContainsAny(s, "\"$`\\") {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// escapeDouble returns s with a backslash before each character that is
// special between double quotes: $ ` " and \. No other character is, in
// POSIX sh.
func escapeDouble(s string) string {
	if !strings.ContainsAny(s, "$`\"\\") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '$' || c == '`' || c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
