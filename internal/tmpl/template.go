package tmpl

// Template is one string with placeholders (see the package comment): a
// URL, a header value, a request body, an output file name or a cost
// expression. Unlike a Command it has no append rule: a Template without
// placeholders expands to itself. Values are substituted as they are;
// quoting or escaping them for where the string goes is the caller's
// business.
//
// A Template is immutable and safe for concurrent use.
type Template struct {
	fields []field
	sum    summary
}

// Parse parses s. Any string is a template: text that is not a
// placeholder is literal.
func Parse(s string) *Template {
	t := &Template{fields: parse(s)}
	t.sum.add(t.fields)
	return t
}

// Expand returns the template with v's values in place of the
// placeholders. Its only error is a column placeholder that v's item
// cannot fill, wrapping ErrColumn.
func (t *Template) Expand(v Values) (string, error) {
	return expand(t.fields, &v)
}

// HasPlaceholder reports whether the template holds a placeholder, so
// that it can differ from one job to the next.
func (t *Template) HasPlaceholder() bool { return t.sum.placeholders }

// UsesItem reports whether a placeholder other than {#} and {%} is used,
// so that the expansion depends on the item.
func (t *Template) UsesItem() bool { return t.sum.usesItem }

// SeqOnly reports whether the template's one placeholder is a single
// {#}, all else literal text: its expansions differ from one job number
// to another, as the same text around different numbers.
func (t *Template) SeqOnly() bool {
	n := 0
	for _, f := range t.fields {
		switch f.kind {
		case literal:
		case seqKind:
			n++
		default:
			return false
		}
	}
	return n == 1
}

// MaxColumn returns the highest column number a placeholder names, such
// as 3 for {3} or {3/.}, or 0 if none does. An item with fewer columns
// fails to expand.
func (t *Template) MaxColumn() int { return t.sum.maxColumn }
