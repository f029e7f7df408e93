package command

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-shellwords"

	"github.com/pace-cli/pace/runner"
)

// shellProgram runs command lines that use shell syntax.
const shellProgram = "sh"

// errBadLine is wrapped by the errors parseLine returns for a line that
// cannot be run, such as one with an unbalanced quote. It wraps
// runner.ErrPermanent: such a job is never retried.
var errBadLine = runner.Permanent(errors.New("bad command line"))

// parseLine turns a command line into argv. A plain line, made of words
// and quotes, is split with go-shellwords and runs directly. A line that
// uses shell syntax (pipes, redirections, ';', '&&', '$VAR', '$(...)',
// backquotes, globs, '~', comments, variable assignments, backslashes)
// becomes ["sh", "-c", line] so that the shell gives it its usual meaning.
// With shell set every line runs under "sh -c".
//
// A line with an unterminated quote, or with nothing to run, is an error
// wrapping errBadLine.
func parseLine(line string, shell bool) ([]string, error) {
	needs, plain, err := scanLine(line)
	if err != nil {
		return nil, fmt.Errorf("%w: %s in %q", errBadLine, err, line)
	}
	if strings.TrimSpace(line) == "" {
		return nil, fmt.Errorf("%w: empty command", errBadLine)
	}
	if shell || needs {
		return []string{shellProgram, "-c", line}, nil
	}
	p := shellwords.NewParser()
	argv, err := p.Parse(escapeInvalid(plain))
	for i := range argv {
		argv[i] = unescapeInvalid(argv[i])
	}
	if err == nil && p.Position >= 0 {
		// Unreachable: scanLine sends every operator to the shell.
		err = errors.New("shell operator")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v in %q", errBadLine, err, line)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: empty command", errBadLine)
	}
	return argv, nil
}

// go-shellwords reads a line rune by rune and writes each byte of invalid
// UTF-8 (a Latin-1 file name) as U+FFFD, so the command would run with
// other bytes. escapeInvalid writes each such byte b as the rune
// invalidBase+b before it splits the line, and unescapeInvalid turns them
// back into their bytes. The runes are private use, at the very end of
// Unicode; a line that holds one of them itself goes to the shell
// (scanLine).
const invalidBase = 0x10ff00

// escapeInvalid returns s with each byte of invalid UTF-8 written as a rune
// from invalidBase.
func escapeInvalid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(invalidBase + rune(s[i]))
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unescapeInvalid undoes escapeInvalid.
func unescapeInvalid(s string) string {
	if !strings.ContainsFunc(s, isEscapedByte) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isEscapedByte(r) {
			b.WriteByte(byte(r - invalidBase))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isEscapedByte(r rune) bool { return r >= invalidBase+0x80 && r <= invalidBase+0xff }

// scanLine reports whether line needs a shell to mean what it says, or
// why it can never be run. It follows POSIX sh quoting: nothing is
// special inside single quotes; inside double quotes only '$', '`' and
// '\' are. ANSI-C quotes as runner.Quote writes them ($'a\nb', in a job
// log's Command or --dry-run's lines) need no shell: plain is line with
// each of them written in single quotes instead, for go-shellwords, which
// does not read them (sh may not either: dash 0.5.12 does not).
func scanLine(line string) (needsShell bool, plain string, err error) {
	const (
		unquoted = iota
		single
		double
	)
	state := unquoted
	wordStart := true    // the next character begins a word
	firstWord := true    // still in the first word of the line
	firstQuoted := false // the first word has quotes in it so far
	var rewritten strings.Builder
	copied := 0 // line[:copied] is in rewritten
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == 0xf4 { // the first byte of escapeInvalid's runes
			if r, _ := utf8.DecodeRuneInString(line[i:]); isEscapedByte(r) {
				needsShell = true // escapeInvalid could not tell it from a byte
			}
		}
		switch state {
		case single:
			if c == '\'' {
				state = unquoted
			}
			continue
		case double:
			switch c {
			case '"':
				state = unquoted
			case '\\':
				needsShell = true
				i++ // the next character is escaped
			case '$', '`':
				needsShell = true
			}
			continue
		}
		atStart := wordStart
		wordStart = false
		switch c {
		case ' ', '\t':
			wordStart = true
			if !atStart {
				firstWord = false
			}
		case '\'':
			state = single
			firstQuoted = firstQuoted || firstWord
		case '"':
			state = double
			firstQuoted = firstQuoted || firstWord
		case '\\':
			needsShell = true
			i++ // the next character is escaped
		case '$':
			if text, n, ok := runner.UnquoteANSI(line[i:]); ok {
				rewritten.WriteString(line[copied:i])
				rewritten.WriteString("'" + strings.ReplaceAll(text, "'", `'"'"'`) + "'")
				copied = i + n
				i += n - 1
				firstQuoted = firstQuoted || firstWord
				continue
			}
			needsShell = true
		case '|', '&', ';', '<', '>', '(', ')', '`', '*', '?', '[', '\n', '\r':
			needsShell = true
		case '~', '#':
			if atStart {
				needsShell = true
			}
		case '=':
			// NAME=value before the command is an assignment.
			if firstWord && !firstQuoted && i > 0 && isName(line[strings.LastIndexAny(line[:i], " \t")+1:i]) {
				needsShell = true
			}
		}
	}
	switch state {
	case single:
		return false, "", errors.New("unterminated single quote")
	case double:
		return false, "", errors.New("unterminated double quote")
	}
	if copied == 0 {
		return needsShell, line, nil
	}
	rewritten.WriteString(line[copied:])
	return needsShell, rewritten.String(), nil
}

// isName reports whether s is a shell variable name.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return false
	}
	return true
}
