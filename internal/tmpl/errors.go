package tmpl

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrTemplate is wrapped by the errors of ParseCommand: a template that
// cannot be used at all, such as an empty command or a shell template that
// cannot be quoted safely. It is the user's to fix before anything runs.
var ErrTemplate = errors.New("bad template")

// ErrColumn is wrapped by the error of an expansion whose item lacks a
// column that a placeholder names, such as {3} for an item with two
// columns. It concerns that one item only. The message quotes the item
// (its first 60 bytes), so a caller that must not show items, such as one
// that puts them in a secret header, should replace it.
var ErrColumn = errors.New("missing column")

// tmplError is an error whose message is written for the user and which
// wraps one of the sentinels, so that the message need not repeat it.
type tmplError struct {
	kind error // ErrTemplate or ErrColumn
	msg  string
}

func (e *tmplError) Error() string { return e.msg }
func (e *tmplError) Unwrap() error { return e.kind }

// templateErrorf returns an error wrapping ErrTemplate.
func templateErrorf(format string, args ...any) error {
	return &tmplError{kind: ErrTemplate, msg: fmt.Sprintf(format, args...)}
}

// columnError returns the error for placeholder ph (as written), which
// names a column that item, split into n columns, does not have.
func columnError(ph, item string, n int) error {
	var has string
	switch n {
	case 0:
		has = "has no columns"
	case 1:
		has = "has 1 column"
	default:
		has = fmt.Sprintf("has %d columns", n)
	}
	return &tmplError{kind: ErrColumn, msg: fmt.Sprintf("%s: item %q %s", ph, shorten(item), has)}
}

// maxShown is how many bytes of an item an error message shows.
const maxShown = 60

// shorten returns s cut to about maxShown bytes, on a rune boundary, with
// "..." after it if it was cut.
func shorten(s string) string {
	if len(s) <= maxShown {
		return s
	}
	i := maxShown
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}
