package command

import (
	"errors"
	"fmt"
	"strings"

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
	needs, err := scanLine(line)
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
	argv, err := p.Parse(line)
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

// scanLine reports whether line needs a shell to mean what it says, or
// why it can never be run. It follows POSIX sh quoting: nothing is
// special inside single quotes; inside double quotes only '$', '`' and
// '\' are.
func scanLine(line string) (needsShell bool, err error) {
	const (
		plain = iota
		single
		double
	)
	state := plain
	wordStart := true    // the next character begins a word
	firstWord := true    // still in the first word of the line
	firstQuoted := false // the first word has quotes in it so far
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch state {
		case single:
			if c == '\'' {
				state = plain
			}
			continue
		case double:
			switch c {
			case '"':
				state = plain
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
		case '|', '&', ';', '<', '>', '(', ')', '`', '$', '*', '?', '[', '\n', '\r':
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
		return false, errors.New("unterminated single quote")
	case double:
		return false, errors.New("unterminated double quote")
	}
	return needsShell, nil
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
