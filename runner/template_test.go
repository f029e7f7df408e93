package runner

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestTemplateExpand(t *testing.T) {
	tests := []struct {
		args []string
		item string
		want []string
	}{
		// No placeholder: the item is the last argument.
		{[]string{"echo"}, "a b", []string{"echo", "a b"}},
		{[]string{"echo", "-n"}, "x", []string{"echo", "-n", "x"}},
		// Each placeholder with GNU parallel's meaning.
		{[]string{"p", "{}"}, "dir/sub/a.tar.gz", []string{"p", "dir/sub/a.tar.gz"}},
		{[]string{"p", "{.}"}, "dir/sub/a.tar.gz", []string{"p", "dir/sub/a.tar"}},
		{[]string{"p", "{/}"}, "dir/sub/a.tar.gz", []string{"p", "a.tar.gz"}},
		{[]string{"p", "{//}"}, "dir/sub/a.tar.gz", []string{"p", "dir/sub"}},
		{[]string{"p", "{/.}"}, "dir/sub/a.tar.gz", []string{"p", "a.tar"}},
		{[]string{"p", "{#}"}, "x", []string{"p", "7"}},
		{[]string{"p", "{%}"}, "x", []string{"p", "3"}},
		// Several in one argument, mixed with text; no item appended.
		{[]string{"convert", "{}", "out/{/.}-{#}.png"}, "in/cat.jpg", []string{"convert", "in/cat.jpg", "out/cat-7.png"}},
		// Unknown braces are left alone; {} still counts.
		{[]string{"p", "{x}", "{{}}"}, "i", []string{"p", "{x}", "{i}"}},
		{[]string{"p", "{"}, "i", []string{"p", "{", "i"}},
		// The item is one literal argument, whatever it holds.
		{[]string{"echo", "{}"}, "x; rm -rf ~", []string{"echo", "x; rm -rf ~"}},
		{[]string{"echo"}, "$(touch pwned) `id` 'q\" \\", []string{"echo", "$(touch pwned) `id` 'q\" \\"}},
		// A placeholder in the program name.
		{[]string{"{}", "--version"}, "go", []string{"go", "--version"}},
		// Empty argument stays.
		{[]string{"p", "", "{}"}, "i", []string{"p", "", "i"}},
	}
	for _, tt := range tests {
		tmpl, err := NewTemplate(tt.args, false)
		if err != nil {
			t.Fatal(err)
		}
		got := tmpl.Expand(tt.item, 7, 3)
		if !slices.Equal(got, tt.want) {
			t.Errorf("NewTemplate(%q).Expand(%q, 7, 3) = %q, want %q", tt.args, tt.item, got, tt.want)
		}
	}
}

func TestPathPlaceholders(t *testing.T) {
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
	}
}

func TestTemplateShell(t *testing.T) {
	tests := []struct {
		args []string
		item string
		want string
	}{
		{[]string{"echo {} | wc -c"}, "a b", "echo 'a b' | wc -c"},
		{[]string{"echo"}, "x; rm -rf ~", "echo 'x; rm -rf ~'"},
		{[]string{"cp", "{}", "{.}.bak"}, "it's", `cp "it's" "it's".bak`},
		{[]string{"echo"}, `'"`, `echo ''\''"'`},
		{[]string{"echo", "{#}"}, "x", "echo 7"},
	}
	for _, tt := range tests {
		tmpl, _ := NewTemplate(tt.args, true)
		got := tmpl.Expand(tt.item, 7, 1)
		want := []string{"sh", "-c", tt.want}
		if !slices.Equal(got, want) {
			t.Errorf("shell template %q with %q = %q, want %q", tt.args, tt.item, got, want)
		}
	}
}

func TestNewTemplateEmpty(t *testing.T) {
	if _, err := NewTemplate(nil, false); err == nil {
		t.Error("NewTemplate(nil) = nil error, want one")
	}
}

func TestTemplateProgram(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		prog  string
		plain bool
	}{
		{[]string{"echo", "{}"}, "echo", true},
		{[]string{"{}"}, "", false},
		{[]string{"./bin/{/}"}, "", false},
	} {
		tmpl, _ := NewTemplate(tt.args, false)
		prog, plain := tmpl.Program()
		if prog != tt.prog || plain != tt.plain {
			t.Errorf("NewTemplate(%q).Program() = %q, %v; want %q, %v", tt.args, prog, plain, tt.prog, tt.plain)
		}
	}
}

// FuzzTemplate checks that expansion never lets an item change the shape
// of the command: with a shell the script, split back into words, holds the
// item exactly once as one word; without one, the item is exactly one
// argument.
func FuzzTemplate(f *testing.F) {
	for _, s := range []string{"a", "x; rm -rf ~", "$(id)", "`id`", "'", "\"", "a b\tc\nd", "\\", "{}", "{.}{/}", "--", "-n", ""} {
		f.Add(s, "{}")
		f.Add(s, "pre-{/.}-{#}")
	}
	f.Fuzz(func(t *testing.T, item, arg string) {
		tmpl, err := NewTemplate([]string{"cmd", arg}, false)
		if err != nil {
			t.Fatal(err)
		}
		argv := tmpl.Expand(item, 1, 1)
		if argv[0] != "cmd" {
			t.Fatalf("argv[0] = %q, want cmd", argv[0])
		}
		want := 2
		if !tmpl.HasPlaceholder() {
			want = 3
			if argv[2] != item {
				t.Fatalf("appended argument = %q, want the item %q", argv[2], item)
			}
		}
		if len(argv) != want {
			t.Fatalf("Expand(%q) with %q = %q: %d arguments, want %d", item, arg, argv, len(argv), want)
		}
		if arg == "{}" && argv[1] != item {
			t.Fatalf("{} = %q, want %q", argv[1], item)
		}

		// Shell form: the item, quoted, is one word of the script.
		st, _ := NewTemplate([]string{"printf", "%s", "{}"}, true)
		script := st.Expand(item, 1, 1)[2]
		words, ok := shellSplit(script)
		if !ok || !slices.Equal(words, []string{"printf", "%s", item}) {
			t.Fatalf("script %q splits into %q (ok=%v), want [printf %%s %q]", script, words, ok, item)
		}
	})
}

// shellSplit splits a script made of bare words, single-quoted strings
// and double-quoted strings without expansions the way a POSIX shell does,
// and reports false on anything else.
func shellSplit(s string) ([]string, bool) {
	var words []string
	var b strings.Builder
	inWord, quoted, dquoted := false, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quoted:
			if c == '\'' {
				quoted = false
			} else {
				b.WriteByte(c)
			}
		case dquoted:
			switch c {
			case '"':
				dquoted = false
			case '$', '`', '\\':
				return nil, false // Quote never puts these in double quotes
			default:
				b.WriteByte(c)
			}
		case c == '\'':
			quoted, inWord = true, true
		case c == '"':
			dquoted, inWord = true, true
		case c == ' ':
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
			inWord = true
		case strings.IndexByte("|&;<>()$`*?[#~\t\n", c) >= 0:
			return nil, false
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	if quoted || dquoted {
		return nil, false
	}
	if inWord {
		words = append(words, b.String())
	}
	return words, true
}

func ExampleTemplate() {
	tmpl, _ := NewTemplate([]string{"convert", "{}", "thumbs/{/.}.png"}, false)
	fmt.Printf("%q\n", tmpl.Expand("photos/cat.jpg", 1, 1))
	tmpl, _ = NewTemplate([]string{"echo"}, false)
	fmt.Printf("%q\n", tmpl.Expand("x; rm -rf ~", 2, 1))
	// Output:
	// ["convert" "photos/cat.jpg" "thumbs/cat.png"]
	// ["echo" "x; rm -rf ~"]
}
