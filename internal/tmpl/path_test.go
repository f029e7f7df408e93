package tmpl

import (
	"slices"
	"testing"
)

func TestPathModifiers(t *testing.T) {
	// Expected values are what GNU parallel prints for
	// parallel echo '{.}|{/}|{//}|{/.}' ::: ITEM.
	tests := []struct{ item, noExt, base, dir, baseNoExt string }{
		{"a.txt", "a", "a.txt", ".", "a"},
		{"a", "a", "a", ".", "a"},
		{"dir/a.txt", "dir/a", "a.txt", "dir", "a"},
		{"dir.d/a", "dir.d/a", "a", "dir.d", "a"},
		{"/a.txt", "/a", "a.txt", "/", "a"},
		{"/", "/", "", "/", ""},
		{"a/b/", "a/b/", "", "a", ""},
		{"a//b", "a//b", "b", "a", "b"},
		{"//a", "//a", "a", "/", "a"},
		{".bashrc", "", ".bashrc", ".", ""},
		{"a.", "a", "a.", ".", "a"},
		{"x/.", "x/", ".", "x", ""},
		{"", "", "", ".", ""},
	}
	for _, tt := range tests {
		got := []string{trimExt(tt.item), basename(tt.item), dirname(tt.item), trimExt(basename(tt.item))}
		want := []string{tt.noExt, tt.base, tt.dir, tt.baseNoExt}
		if !slices.Equal(got, want) {
			t.Errorf("%q: {.} {/} {//} {/.} = %q, want %q", tt.item, got, want)
		}
		// The same through a template, on the item and on a column.
		for _, src := range []string{"{.}|{/}|{//}|{/.}", "{2.}|{2/}|{2//}|{2/.}"} {
			got, err := Parse(src).Expand(Values{Item: "x " + tt.item, Columns: []string{"x", tt.item}})
			if src[1] == '.' {
				got, err = Parse(src).Expand(Values{Item: tt.item})
			}
			want := tt.noExt + "|" + tt.base + "|" + tt.dir + "|" + tt.baseNoExt
			if err != nil || got != want {
				t.Errorf("Parse(%q).Expand(%q) = %q, %v; want %q", src, tt.item, got, err, want)
			}
		}
	}
}
