package tmpl

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzShellQuoting runs shell templates of many shapes (see shapeFor) with
// arbitrary items under sh, and bash in POSIX mode, and checks that the
// output is exactly the literal item and that nothing ran.
func FuzzShellQuoting(f *testing.F) {
	// A few seeds: TestShellRuns tries every shape with many items, and
	// each run here costs a few forks.
	for i, n := range []uint16{1, 2, 5, 21, 100, 1000, 4321, 65535} {
		f.Add(n, core[i*5%len(core)])
	}
	f.Fuzz(func(t *testing.T, n uint16, item string) {
		if strings.IndexByte(item, 0) >= 0 || len(item) > 1<<16 {
			t.Skip("an argument cannot hold a NUL byte, nor be this long")
		}
		sp := shapeFor(n)
		c, err := ParseCommand(sp.args, true)
		if err != nil {
			t.Fatalf("ParseCommand(%q, true) = %v", sp.args, err)
		}
		dir, extra := sandbox(t)
		for _, sh := range shells(t) {
			checkRun(t, sh, dir, extra, c, sp, item)
		}
	})
}

// shapeFor returns shapes[n] if there is one, else a shape made from the
// digits of n: printf '%s\n' and a placeholder wrapped in quotes, $(...),
// ${...} and text, nested as the digits say.
func shapeFor(n uint16) shape {
	if int(n) < len(shapes) {
		return shapes[n]
	}
	src, want := nest(false, int(n))
	return shape{
		args: []string{`printf '%s\n' ` + src},
		want: func(s string) string { return want(s) + "\n" },
	}
}

// nest returns a template word holding one {} and what it prints for an
// item, using n's digits to choose the wrapping, outermost first. The word
// stands between double quotes if inDouble is set, else unquoted.
func nest(inDouble bool, n int) (string, func(string) string) {
	id := func(s string) string { return s }
	if inDouble {
		d, rest := n%3, n/3
		switch d {
		case 1:
			src, want := nest(false, rest)
			return `$(printf '%s' ` + src + `)`, func(s string) string { return trimNL(want(s)) }
		case 2:
			src, want := nest(true, rest)
			return `<'` + src + `$>`, func(s string) string { return "<'" + want(s) + "$>" }
		}
		return "{}", id
	}
	d, rest := n%6, n/6
	switch d {
	case 1:
		return `'a"{}'`, func(s string) string { return `a"` + s }
	case 2:
		src, want := nest(true, rest)
		return `"` + src + `"`, want
	case 3:
		src, want := nest(false, rest)
		return `"$(printf '%s' ` + src + `)"`, func(s string) string { return trimNL(want(s)) }
	case 4:
		src, want := nest(true, rest)
		return `${X:-"` + src + `"}`, want
	case 5:
		src, want := nest(false, rest)
		return `x\"` + src + `'y'`, func(s string) string { return `x"` + want(s) + "y" }
	}
	return "{}", id
}

// FuzzParse checks that any template parses without panicking, expands
// the same way twice, and expands to itself if it has no placeholder; and
// that in shell mode a value never changes how the rest of the script is
// read.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "{}", "{.}{/}{//}{/.}{#}{%}{len}", "{1}{2/.}{10}", "{0}{01}{-1}{x}{ }", `{"a":{}}`, "{{}}", "{", "}"} {
		f.Add(s, "x; touch pwned")
	}
	for _, sp := range shapes {
		f.Add(strings.Join(sp.args, " "), `'"$(x)`)
	}
	for _, tt := range refused {
		f.Add(tt.arg, `\`)
	}
	for _, arg := range accepted {
		f.Add(arg, "a'b\"c\\")
	}
	f.Fuzz(func(t *testing.T, src, item string) {
		tm := Parse(src)
		v := Values{Item: "plain", Seq: 3, Slot: 2}
		a, errA := tm.Expand(v)
		b, errB := tm.Expand(v)
		if a != b || (errA == nil) != (errB == nil) {
			t.Fatalf("Parse(%q).Expand twice = %q, %v and %q, %v", src, a, errA, b, errB)
		}
		if (tm.MaxColumn() > 1) != errors.Is(errA, ErrColumn) || tm.MaxColumn() <= 1 && errA != nil {
			t.Fatalf("Parse(%q).Expand(plain) = %v with MaxColumn %d", src, errA, tm.MaxColumn())
		}
		if !tm.HasPlaceholder() && a != src {
			t.Fatalf("Parse(%q).Expand = %q, want the template itself", src, a)
		}
		var text strings.Builder
		for _, f := range tm.fields {
			text.WriteString(f.text)
		}
		if text.String() != src {
			t.Fatalf("Parse(%q) fields spell %q", src, text.String())
		}

		c, err := ParseCommand([]string{src}, false)
		if err != nil {
			t.Fatalf("ParseCommand(%q, false) = %v", src, err)
		}
		if c.AppendsItem() == tm.HasPlaceholder() || c.MaxColumn() != tm.MaxColumn() {
			t.Fatalf("ParseCommand(%q, false): AppendsItem %v, MaxColumn %d; Parse: HasPlaceholder %v, MaxColumn %d",
				src, c.AppendsItem(), c.MaxColumn(), tm.HasPlaceholder(), tm.MaxColumn())
		}

		c, err = ParseCommand([]string{src}, true)
		if err != nil {
			if !errors.Is(err, ErrTemplate) {
				t.Fatalf("ParseCommand(%q, true) = %v, want an error wrapping ErrTemplate", src, err)
			}
			return
		}
		// The script for a hostile item reads, to the lexer, as the
		// script for a plain one does: the value left the lexer's state as
		// it found it.
		if c.MaxColumn() > 64 {
			return // {7777777} would take as many columns
		}
		cols := slices.Repeat([]string{item}, c.MaxColumn())
		argv, err := c.Expand(Values{Item: item, Columns: cols, Seq: 1, Slot: 1})
		if err != nil {
			t.Fatalf("ParseCommand(%q, true).Expand(%q) = %v", src, item, err)
		}
		want := readScript(src, c)
		if got := lexEnd(argv[2]); got != want {
			t.Fatalf("ParseCommand(%q, true).Expand(%q) = %q, which reads as %s; want %s", src, item, argv[2], got, want)
		}
	})
}

// readScript returns lexEnd of c's script for the placeholders of src.
func readScript(src string, c *Command) string {
	cols := slices.Repeat([]string{"x"}, c.MaxColumn())
	argv, _ := c.Expand(Values{Item: "x", Columns: cols})
	return lexEnd(argv[2])
}

// lexEnd describes where the lexer is at the end of the literal script s.
func lexEnd(s string) string {
	l := newLexer()
	l.lit(s)
	if l.lost != nil {
		return "lost " + l.lost.where
	}
	var b strings.Builder
	for _, f := range l.stack {
		b.WriteString([]string{"top", "cmdsub", "single", "double", "param", "arith", "backquote"}[f.ctx])
		b.WriteByte(' ')
	}
	if l.pendEscape || l.pendDollar {
		b.WriteString("pending")
	}
	return b.String()
}

// TestShapesParse checks that every shape FuzzShellQuoting can pick is
// accepted, so that the fuzzer spends its time on items.
func TestShapesParse(t *testing.T) {
	for n := 0; n < 1<<16; n += 7 {
		sp := shapeFor(uint16(n))
		if _, err := ParseCommand(sp.args, true); err != nil {
			t.Fatalf("shapeFor(%d): ParseCommand(%q, true) = %v", n, sp.args, err)
		}
	}
}

// FuzzParseCommand: any command line parses or is refused with
// ErrTemplate, and never panics, with or without a shell (the scans for
// a shell's script behind a wrapper and within a script included).
func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{"sh -c 'echo {}'", `timeout 5 bash --rcfile x -ec "sh -c \"{}\""`, "env sh -c", "sh -c '", `x "sh -c '{}`, "env -iSecho {}", "env -{}S{} x", `env --split-string="ls {}"`} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, src string, shell bool) {
		for _, args := range [][]string{strings.Fields(src), {src}} {
			if len(args) == 0 {
				continue
			}
			if _, err := ParseCommand(args, shell); err != nil && !errors.Is(err, ErrTemplate) {
				t.Errorf("ParseCommand(%q, %v) = %v, want nil or ErrTemplate", args, shell, err)
			}
		}
	})
}
