package tmpl

import (
	"strconv"
	"strings"
)

// kind is what a field of a parsed template stands for.
type kind uint8

const (
	literal  kind = iota // text as written
	itemKind             // the item or one of its columns, with a modifier
	seqKind              // {#}
	slotKind             // {%}
	lenKind              // {len}
)

// modifier is the path operation a placeholder applies to the item or a
// column.
type modifier uint8

const (
	whole     modifier = iota // {}
	noExt                     // {.}
	base                      // {/}
	dir                       // {//}
	baseNoExt                 // {/.}
)

// modifiers maps the text after the column number (or after '{' for the
// item) to its modifier.
var modifiers = map[string]modifier{"": whole, ".": noExt, "/": base, "//": dir, "/.": baseNoExt}

// apply returns s with m applied.
func (m modifier) apply(s string) string {
	switch m {
	case noExt:
		return trimExt(s)
	case base:
		return basename(s)
	case dir:
		return dirname(s)
	case baseNoExt:
		return trimExt(basename(s))
	}
	return s
}

// field is a piece of a template: literal text or one placeholder.
type field struct {
	text  string   // the literal text, or the placeholder as written ("{2/.}")
	kind  kind     // literal or which placeholder
	col   int      // itemKind: 0 for the item, else the column number
	mod   modifier // itemKind
	quote quoting  // how the value is written: raw unless in shell mode
}

// maxColumnDigits bounds a column number, so that it fits an int.
const maxColumnDigits = 9

// maxPlaceholder is the length of the longest placeholder, "{999999999/.}".
const maxPlaceholder = 1 + maxColumnDigits + 2 + 1

// parse splits s into literal fields and placeholder fields. Adjacent
// literal text makes one field; an empty s has no fields.
func parse(s string) []field {
	var fields []field
	lit := 0 // start of the pending literal
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		f, ok := matchPlaceholder(s[i:])
		if !ok {
			continue
		}
		if lit < i {
			fields = append(fields, field{text: s[lit:i]})
		}
		fields = append(fields, f)
		i += len(f.text) - 1
		lit = i + 1
	}
	if lit < len(s) {
		fields = append(fields, field{text: s[lit:]})
	}
	return fields
}

// matchPlaceholder returns the placeholder that s, which starts with '{',
// starts with, and false if it starts with none.
func matchPlaceholder(s string) (field, bool) {
	end := strings.IndexByte(s[:min(len(s), maxPlaceholder)], '}')
	if end < 0 {
		return field{}, false
	}
	f := field{text: s[:end+1]}
	inner := s[1:end]
	switch inner {
	case "#":
		f.kind = seqKind
		return f, true
	case "%":
		f.kind = slotKind
		return f, true
	case "len":
		f.kind = lenKind
		return f, true
	}
	digits := 0
	for digits < len(inner) && '0' <= inner[digits] && inner[digits] <= '9' {
		digits++
	}
	if digits > maxColumnDigits || digits > 0 && inner[0] == '0' {
		return field{}, false
	}
	mod, ok := modifiers[inner[digits:]]
	if !ok {
		return field{}, false
	}
	f.kind, f.mod = itemKind, mod
	if digits > 0 {
		f.col, _ = strconv.Atoi(inner[:digits]) // cannot fail: at most 9 digits
	}
	return f, true
}

// value returns what f stands for with v, unquoted. Its only error is a
// column that v lacks, wrapping ErrColumn.
func (f *field) value(v *Values) (string, error) {
	switch f.kind {
	case itemKind:
		s := v.Item
		if f.col > 0 {
			var ok bool
			if s, ok = v.column(f.col); !ok {
				return "", columnError(f.text, v.Item, v.numColumns())
			}
		}
		return f.mod.apply(s), nil
	case seqKind:
		return strconv.FormatInt(v.Seq, 10), nil
	case slotKind:
		return strconv.Itoa(v.Slot), nil
	case lenKind:
		return strconv.Itoa(len(v.Item)), nil
	}
	return f.text, nil
}

// numeric reports whether f's value is always a decimal number.
func (f *field) numeric() bool { return f.kind == seqKind || f.kind == slotKind || f.kind == lenKind }

// usesItem reports whether f's value comes from the item.
func (f *field) usesItem() bool { return f.kind == itemKind || f.kind == lenKind }

// expand returns fields with v's values substituted, each quoted as its
// field says.
func expand(fields []field, v *Values) (string, error) {
	if len(fields) == 1 && fields[0].kind == literal {
		return fields[0].text, nil
	}
	var b strings.Builder
	for i := range fields {
		f := &fields[i]
		if f.kind == literal {
			b.WriteString(f.text)
			continue
		}
		s, err := f.value(v)
		if err != nil {
			return "", err
		}
		b.WriteString(f.quote.apply(s))
	}
	return b.String(), nil
}

// summary is what callers may ask of a parsed template.
type summary struct {
	placeholders bool // some field is a placeholder
	usesItem     bool // some placeholder's value comes from the item
	maxColumn    int  // the highest column number named, or 0
}

// add records fields in s.
func (s *summary) add(fields []field) {
	for i := range fields {
		f := &fields[i]
		if f.kind == literal {
			continue
		}
		s.placeholders = true
		s.usesItem = s.usesItem || f.usesItem()
		s.maxColumn = max(s.maxColumn, f.col)
	}
}
