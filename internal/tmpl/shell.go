package tmpl

import "strings"

// This file holds the lexer that finds, for each placeholder of a shell
// template, how its value must be quoted. It follows POSIX sh only as far
// as quoting goes: quotes, backslashes, $(...), ${...}, $((...)),
// backquotes, comments and the start of here-documents. Where shells
// disagree, or where following the script would take a parser, it gives
// up ("gets lost"), and every placeholder after that point is refused.
// Refusing is always safe; guessing is not.

// context is a kind of place in a shell script.
type context uint8

const (
	ctxTop       context = iota // unquoted, outside any substitution
	ctxCmdSub                   // unquoted, inside $(...)
	ctxSingle                   // inside '...'
	ctxDouble                   // inside "..."
	ctxParam                    // inside ${...}
	ctxArith                    // inside $((...)) or ((...))
	ctxBackquote                // inside `...`
)

// frame is one context the lexer is in, innermost last.
type frame struct {
	ctx       context
	depth     int  // ctxCmdSub, ctxArith: parentheses opened and not yet closed
	inDouble  bool // ctxParam: the ${ stands between double quotes
	wordStart bool // ctxTop, ctxCmdSub: the next character begins a word
	comment   bool // ctxTop, ctxCmdSub: in a comment, until a newline
	murky     bool // ctxBackquote: holds something shells read differently
}

// reason says why a placeholder cannot be quoted where it stands.
type reason struct {
	where string // where the placeholder is: "inside backquotes"
	fix   string // what the user can do instead
}

// Reasons for refusing a placeholder where it stands.
var (
	inBackquotes   = &reason{"inside backquotes", "use $(...) instead of backquotes"}
	inArith        = &reason{"inside arithmetic, where the shell would evaluate it", "compute with expr instead, as in $(expr {} + 1); only {#}, {%} and {len} may stand in arithmetic"}
	inComment      = &reason{"inside a comment", "move it before the #, or quote the #"}
	inParam        = &reason{"unquoted inside ${...}", `put it in double quotes there, as in ${X:-"{}"}`}
	inQuotedParam  = &reason{"inside a double-quoted ${...}", `drop the outer quotes and quote it inside, as in ${X:-"{}"}`}
	afterBackslash = &reason{"right after a backslash, which would escape the quote put around the value", "remove the backslash"}
	afterDollar    = &reason{"right after a $, which would expand the value", `write \$ for a literal dollar sign`}
)

// Reasons for getting lost: constructs after which the lexer cannot
// follow the script.
var (
	lostHereDoc      = &reason{"after a here-document (<<), which pace does not follow", "move it before the <<"}
	lostCase         = &reason{"after a case statement inside $(...), which pace does not follow", "move the case out of the $(...)"}
	lostDollarQuote  = &reason{`after $'...' or $"...", which shells read differently`, `use '...' or "..." instead`}
	lostBracketArith = &reason{"after $[...], which shells read differently", "use $((...)) instead"}
	lostQuotedParam  = &reason{"after a quote inside a double-quoted ${...}, which shells read differently", `drop the outer quotes, as in ${X:-"..."}`}
	lostBraceParam   = &reason{"after a { inside ${...}, which shells read differently", `quote the {, as in ${X:-"{"}`}
	lostArithParen   = &reason{"after (( closed by a single ), which shells read differently", "write ( ( for a subshell in a subshell"}
	lostArithQuote   = &reason{"after a quote inside arithmetic, which shells read differently", "remove the quote"}
	lostContinuation = &reason{"after a backslash at the end of a line, which pace does not follow", "join the lines"}
	lostComment      = &reason{"after a comment inside $(...), which older shells read differently", "remove the comment"}
	lostBackquotes   = &reason{"after backquotes holding quotes, backslashes, parentheses, braces, # or <", "use $(...) instead of backquotes"}
)

// lexer follows the quoting of a shell script given piece by piece:
// literal text (lit) and the places where values go (value). The zero
// value is not ready; use newLexer.
type lexer struct {
	stack      []frame // innermost last; stack[0] is ctxTop
	pendEscape bool    // the last text ended with a backslash that escapes what follows
	pendDollar bool    // the last text ended with a $ that expands what follows
	lost       *reason // where the lexer got lost, or nil
}

func newLexer() *lexer {
	return &lexer{stack: []frame{{ctx: ctxTop, wordStart: true}}}
}

// top returns the innermost frame. It is valid until the next push.
func (l *lexer) top() *frame { return &l.stack[len(l.stack)-1] }

func (l *lexer) push(f frame) { l.stack = append(l.stack, f) }

// pop leaves the innermost context, which is not ctxTop.
func (l *lexer) pop() { l.stack = l.stack[:len(l.stack)-1] }

// lose records that the lexer cannot follow the script past this point.
func (l *lexer) lose(r *reason) { l.lost = r }

// value returns how a value that the script holds at this point must be
// quoted, or why it cannot be. A numeric value ({#}, {%}, {len}) may also
// stand in arithmetic, as in $(({%} - 1)), where it goes unquoted.
func (l *lexer) value(numeric bool) (quoting, *reason) {
	if l.lost != nil {
		return raw, l.lost
	}
	if l.pendEscape {
		return raw, afterBackslash
	}
	if l.pendDollar {
		return raw, afterDollar
	}
	f := l.top()
	switch f.ctx {
	case ctxTop, ctxCmdSub:
		if f.comment {
			return raw, inComment
		}
		f.wordStart = false
		return asWord, nil
	case ctxSingle:
		return inSingle, nil
	case ctxDouble:
		return inDouble, nil
	case ctxParam:
		if f.inDouble {
			return raw, inQuotedParam
		}
		return raw, inParam
	case ctxArith:
		if numeric {
			return raw, nil
		}
		return raw, inArith
	}
	return raw, inBackquotes
}

// unterminated returns what the script leaves open at its end, such as
// "double quote", and the text that would close it, or "" if nothing is
// open or the lexer got lost.
func (l *lexer) unterminated() (what, closer string) {
	if l.lost != nil {
		return "", ""
	}
	switch l.top().ctx {
	case ctxSingle:
		return "single quote", "'"
	case ctxDouble:
		return "double quote", `"`
	case ctxCmdSub:
		return "$(", ")"
	case ctxParam:
		return "${", "}"
	case ctxArith:
		return "((", "))"
	case ctxBackquote:
		return "backquote", "`"
	}
	return "", ""
}

// lit reads literal text of the script.
func (l *lexer) lit(s string) {
	l.pendEscape, l.pendDollar = false, false
	for i := 0; i < len(s) && l.lost == nil; i++ {
		switch l.top().ctx {
		case ctxTop, ctxCmdSub:
			i = l.unquoted(s, i)
		case ctxSingle:
			if s[i] == '\'' {
				l.pop()
			}
		case ctxDouble:
			i = l.double(s, i)
		case ctxParam:
			i = l.param(s, i)
		case ctxArith:
			i = l.arith(s, i)
		case ctxBackquote:
			i = l.backquote(s, i)
		}
	}
}

// Each of the following reads s[i] (and maybe what follows) in its
// context and returns the index of the last byte it consumed.

// unquoted reads s[i] at the top level or inside $(...).
func (l *lexer) unquoted(s string, i int) int {
	f := l.top()
	c := s[i]
	if f.comment {
		if c == '\n' {
			f.comment, f.wordStart = false, true
		}
		return i
	}
	start := f.wordStart
	f.wordStart = false
	switch c {
	case '\\':
		return l.escape(s, i)
	case '\'':
		l.push(frame{ctx: ctxSingle})
	case '"':
		l.push(frame{ctx: ctxDouble})
	case '`':
		l.push(frame{ctx: ctxBackquote})
	case '$':
		return l.dollar(s, i)
	case '#':
		if start && f.ctx == ctxCmdSub {
			l.lose(lostComment)
		}
		f.comment = start
	case '(':
		if i+1 < len(s) && s[i+1] == '(' {
			l.push(frame{ctx: ctxArith}) // bash's ((...)) command
			return i + 1
		}
		if f.ctx == ctxCmdSub {
			f.depth++
		}
		f.wordStart = true
	case ')':
		if f.ctx == ctxCmdSub {
			if f.depth == 0 {
				l.pop()
				return i
			}
			f.depth--
		}
		f.wordStart = true
	case '<':
		if i+1 < len(s) && s[i+1] == '<' {
			l.lose(lostHereDoc)
			return i + 1
		}
		f.wordStart = true
	case ' ', '\t', '\n', ';', '&', '|', '>':
		f.wordStart = true
	default:
		// Inside $(...), case patterns end in an unmatched ), which only
		// a parser can tell from the end of the $(...).
		if start && f.ctx == ctxCmdSub && isWord(s[i:], "case") {
			l.lose(lostCase)
		}
	}
	return i
}

// double reads s[i] between double quotes.
func (l *lexer) double(s string, i int) int {
	switch s[i] {
	case '"':
		l.pop()
	case '\\':
		return l.escape(s, i)
	case '`':
		l.push(frame{ctx: ctxBackquote})
	case '$':
		return l.dollar(s, i)
	}
	return i
}

// param reads s[i] inside ${...}.
func (l *lexer) param(s string, i int) int {
	f := l.top()
	switch s[i] {
	case '}':
		l.pop()
	case '\\':
		return l.escape(s, i)
	case '\'', '"':
		// Unquoted, ${X:-'a'} and ${X:-"a"} quote as usual. Between double
		// quotes, whether they quote depends on the shell and operator:
		// "${X:-'a'}" is 'a' but "${X#'a'}" removes a.
		if f.inDouble {
			l.lose(lostQuotedParam)
		} else if s[i] == '\'' {
			l.push(frame{ctx: ctxSingle})
		} else {
			l.push(frame{ctx: ctxDouble})
		}
	case '`':
		l.push(frame{ctx: ctxBackquote})
	case '$':
		return l.dollar(s, i)
	case '{':
		l.lose(lostBraceParam)
	}
	return i
}

// arith reads s[i] inside $((...)) or ((...)).
func (l *lexer) arith(s string, i int) int {
	f := l.top()
	switch s[i] {
	case '(':
		f.depth++
	case ')':
		if f.depth > 0 {
			f.depth--
			return i
		}
		if i+1 < len(s) && s[i+1] == ')' {
			l.pop()
			return i + 1
		}
		l.lose(lostArithParen)
	case '\\':
		return l.escape(s, i)
	case '\'', '"':
		l.lose(lostArithQuote)
	case '`':
		l.push(frame{ctx: ctxBackquote})
	case '$':
		return l.dollar(s, i)
	}
	return i
}

// backquote reads s[i] inside backquotes. Placeholders are refused there,
// so the lexer only needs to find the end, which is simple unless the
// text holds quotes, escapes or nested substitutions.
func (l *lexer) backquote(s string, i int) int {
	f := l.top()
	switch s[i] {
	case '`':
		murky := f.murky
		l.pop()
		if murky {
			l.lose(lostBackquotes)
		}
	case '\\', '\'', '"', '(', ')', '{', '}', '#', '<':
		f.murky = true
	}
	return i
}

// escape reads the backslash at s[i], outside single quotes, and the
// character it escapes. At the end of s it escapes what comes next.
//
// A backslash before a newline is a line continuation: the shell removes
// both before it reads the script, so that ca\<newline>se is case and
// <\<newline><EOF a here-document. Rather than look through them
// everywhere, the lexer gets lost.
func (l *lexer) escape(s string, i int) int {
	if i+1 == len(s) {
		l.pendEscape = true
		return i
	}
	if s[i+1] == '\n' {
		l.lose(lostContinuation)
	}
	return i + 1
}

// dollar reads the $ at s[i], outside single quotes, and what it starts.
func (l *lexer) dollar(s string, i int) int {
	if i+1 == len(s) {
		l.pendDollar = true
		return i
	}
	f := l.top()
	switch c := s[i+1]; c {
	case '(':
		if i+2 < len(s) && s[i+2] == '(' {
			l.push(frame{ctx: ctxArith})
			return i + 2
		}
		l.push(frame{ctx: ctxCmdSub, wordStart: true})
		return i + 1
	case '{':
		l.push(frame{ctx: ctxParam, inDouble: f.ctx == ctxDouble || f.ctx == ctxParam && f.inDouble})
		return i + 1
	case '[':
		l.lose(lostBracketArith)
	case '\'', '"':
		// Between double quotes, $ is literal before either; elsewhere bash
		// and POSIX 2024 read $'...' with escapes and bash reads $"..." as
		// a translated string, while older shells do not.
		if f.ctx != ctxDouble {
			l.lose(lostDollarQuote)
		}
	case '$', '#', '?', '-', '!', '@', '*':
		return i + 1 // a special parameter
	}
	return i
}

// isWord reports whether s starts with the word w followed by a character
// that ends a word.
func isWord(s, w string) bool {
	return len(s) > len(w) && strings.HasPrefix(s, w) && strings.IndexByte(" \t\n;&|()<>", s[len(w)]) >= 0
}
