package tmpl

import (
	"errors"
	"strings"
	"testing"
)

func TestTemplateExpand(t *testing.T) {
	tests := []struct {
		src  string
		v    Values
		want string
	}{
		// Each placeholder with GNU parallel's meaning.
		{"{}", Values{Item: "dir/sub/a.tar.gz"}, "dir/sub/a.tar.gz"},
		{"{.}", Values{Item: "dir/sub/a.tar.gz"}, "dir/sub/a.tar"},
		{"{/}", Values{Item: "dir/sub/a.tar.gz"}, "a.tar.gz"},
		{"{//}", Values{Item: "dir/sub/a.tar.gz"}, "dir/sub"},
		{"{/.}", Values{Item: "dir/sub/a.tar.gz"}, "a.tar"},
		{"{#}", Values{Item: "x", Seq: 7}, "7"},
		{"{%}", Values{Item: "x", Slot: 3}, "3"},
		// {len} counts bytes, not runes.
		{"{len}", Values{Item: "héllo"}, "6"},
		{"{len}", Values{Item: ""}, "0"},
		{"{len}", Values{Item: "a\tb", Columns: []string{"a", "b"}}, "3"},
		// No placeholder: the text itself, no item appended.
		{"https://example.com/", Values{Item: "x"}, "https://example.com/"},
		{"", Values{Item: "x"}, ""},
		// Several in one string, mixed with text.
		{"https://h/{}?n={#}&s={%}", Values{Item: "a b", Seq: 2, Slot: 1}, "https://h/a b?n=2&s=1"},
		{"out/{/.}-{#}.png", Values{Item: "in/cat.jpg", Seq: 7}, "out/cat-7.png"},
		// Without columns, the item is column 1 and the only one.
		{"{1}", Values{Item: "a b"}, "a b"},
		{"{1/.}", Values{Item: "d/a.txt"}, "a"},
		// Columns, with every modifier.
		{"{1}-{2}", Values{Item: "a\tb", Columns: []string{"a", "b"}}, "a-b"},
		{"{2}{1}{2}", Values{Item: "a\tb", Columns: []string{"a", "b"}}, "bab"},
		{"{2.}", Values{Item: "x d/f.tar.gz", Columns: []string{"x", "d/f.tar.gz"}}, "d/f.tar"},
		{"{2/}", Values{Item: "x d/f.tar.gz", Columns: []string{"x", "d/f.tar.gz"}}, "f.tar.gz"},
		{"{2//}", Values{Item: "x d/f.tar.gz", Columns: []string{"x", "d/f.tar.gz"}}, "d"},
		{"{2/.}", Values{Item: "x d/f.tar.gz", Columns: []string{"x", "d/f.tar.gz"}}, "f.tar"},
		{"{10}", Values{Item: "", Columns: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "ten"}}, "ten"},
		// {} is the whole item even with columns; an empty column is fine.
		{"{}|{2}|", Values{Item: "a\t", Columns: []string{"a", ""}}, "a\t||"},
		// Braces that are not placeholders are literal.
		{"{foo}", Values{Item: "i"}, "{foo}"},
		{`{"a":1,"b":"{}"}`, Values{Item: "i"}, `{"a":1,"b":"i"}`},
		{"{ }", Values{Item: "i"}, "{ }"},
		{"{{}}", Values{Item: "i"}, "{i}"},
		{"{", Values{Item: "i"}, "{"},
		{"}{", Values{Item: "i"}, "}{"},
		{"{0}", Values{Item: "i"}, "{0}"},
		{"{01}", Values{Item: "i"}, "{01}"},
		{"{-1}", Values{Item: "i"}, "{-1}"},
		{"{1x}", Values{Item: "i"}, "{1x}"},
		{"{./}", Values{Item: "i"}, "{./}"},
		{"{1234567890}", Values{Item: "i"}, "{1234567890}"},
		{"{LEN}", Values{Item: "i"}, "{LEN}"},
		{"{#}}", Values{Item: "i", Seq: 1}, "1}"},
		// Values are not read again: an item holding a placeholder stays.
		{"{}", Values{Item: "{#}"}, "{#}"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.src).Expand(tt.v)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q).Expand(%+v) = %q, %v; want %q", tt.src, tt.v, got, err, tt.want)
		}
	}
}

func TestTemplateMissingColumn(t *testing.T) {
	tests := []struct {
		src  string
		v    Values
		want string
	}{
		{"{3}", Values{Item: "a b", Columns: []string{"a", "b"}}, `{3}: item "a b" has 2 columns`},
		{"x{2/.}y", Values{Item: "a"}, `{2/.}: item "a" has 1 column`},
		{"{1}", Values{Item: "", Columns: []string{}}, `{1}: item "" has no columns`},
		{"{2}", Values{Item: "tab\there\n"}, `{2}: item "tab\there\n" has 1 column`},
		{"{2}", Values{Item: string(make([]byte, 100))}, `{2}: item "` + strings.Repeat(`\x00`, 60) + `..." has 1 column`},
		// A long item is cut, on a rune boundary.
		{"{2}", Values{Item: "x" + strings.Repeat("é", 40)}, `{2}: item "x` + strings.Repeat("é", 29) + `..." has 1 column`},
	}
	for _, tt := range tests {
		got, err := Parse(tt.src).Expand(tt.v)
		if err == nil || err.Error() != tt.want || !errors.Is(err, ErrColumn) || errors.Is(err, ErrTemplate) {
			t.Errorf("Parse(%q).Expand(%+v) = %q, %v; want error %q wrapping ErrColumn", tt.src, tt.v, got, err, tt.want)
		}
	}
}

func TestTemplateQueries(t *testing.T) {
	tests := []struct {
		src                    string
		placeholders, usesItem bool
		maxColumn              int
	}{
		{"https://h/", false, false, 0},
		{"{#}-{%}", true, false, 0},
		{"{}", true, true, 0},
		{"{/.}", true, true, 0},
		{"{len}", true, true, 0},
		{"{2}{7/}{1}", true, true, 7},
		{"{foo} {0}", false, false, 0},
	}
	for _, tt := range tests {
		tm := Parse(tt.src)
		if got := tm.HasPlaceholder(); got != tt.placeholders {
			t.Errorf("Parse(%q).HasPlaceholder() = %v, want %v", tt.src, got, tt.placeholders)
		}
		if got := tm.UsesItem(); got != tt.usesItem {
			t.Errorf("Parse(%q).UsesItem() = %v, want %v", tt.src, got, tt.usesItem)
		}
		if got := tm.MaxColumn(); got != tt.maxColumn {
			t.Errorf("Parse(%q).MaxColumn() = %d, want %d", tt.src, got, tt.maxColumn)
		}
	}
	for src, want := range map[string]bool{"{#}": true, "page-{#}.html": true, "{#}{#}": false, "{#}-{%}": false, "{/}": false, "x": false, "{#}{}": false} {
		if got := Parse(src).SeqOnly(); got != want {
			t.Errorf("Parse(%q).SeqOnly() = %v, want %v", src, got, want)
		}
	}
}
