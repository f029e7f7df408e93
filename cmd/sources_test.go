package cmd

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pace-cli/pace/internal/items"
)

// readAll returns what r holds, with the separators of productReader
// made visible: | between values, ; after each item.
func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("\x1f", "|", "\x00", ";").Replace(string(b))
}

func TestSourcesInput(t *testing.T) {
	dir := t.TempDir()
	f1 := filepath.Join(dir, "f1")
	os.WriteFile(f1, []byte("x\ny\n"), 0o644)
	f0 := filepath.Join(dir, "f0")
	os.WriteFile(f0, []byte("p\x00q r\x00"), 0o644)
	for _, tt := range []struct {
		name    string
		sources []items.Source
		null    bool
		stdin   string
		want    string
	}{
		// Every combination, the last source varying fastest.
		{name: "two ::: sources", sources: []items.Source{{Args: []string{"a", "b"}}, {Args: []string{"1", "2", "3"}}},
			want: "a|1;a|2;a|3;b|1;b|2;b|3;"},
		{name: "one ::: source", sources: []items.Source{{Args: []string{"a b", "c"}}}, want: "a b;c;"},
		{name: "a :::: file and :::", sources: []items.Source{{Files: []string{f1}}, {Args: []string{"1"}}}, want: "x|1;y|1;"},
		{name: ":::: stdin", sources: []items.Source{{Args: []string{"a"}}, {Files: []string{"-"}}}, stdin: "s\nt\n", want: "a|s;a|t;"},
		{name: "files of a source one after the other", sources: []items.Source{{Files: []string{f1, f1}}, {Args: []string{"1"}}},
			want: "x|1;y|1;x|1;y|1;"},
		{name: ":::: NUL-separated with -0", sources: []items.Source{{Files: []string{f0}}, {Args: []string{"1"}}}, null: true, want: "p|1;q r|1;"},
		{name: "an empty source: nothing", sources: []items.Source{{Args: []string{"a"}}, {Files: []string{filepath.Join(dir, "empty")}}}},
	} {
		os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644)
		opts := &RunOptions{Sources: tt.sources, Common: CommonOptions{Input: "-", Null: tt.null}}
		in, err := opts.openInput(strings.NewReader(tt.stdin))
		if err != nil {
			t.Errorf("%s: openInput = %v", tt.name, err)
			continue
		}
		if got := readAll(t, in.R); got != tt.want || !in.Sources {
			t.Errorf("%s: items %q (product %v), want %q", tt.name, got, in.Sources, tt.want)
		}
	}

	// One :::: file is read as -a FILE is: streamed.
	opts := &RunOptions{Sources: []items.Source{{Files: []string{f1}}}, Common: CommonOptions{Input: "-"}}
	in, err := opts.openInput(nil)
	if err != nil || in.Sources || in.Name != f1 || readAll(t, in.R) != "x\ny\n" {
		t.Errorf("one :::: file: %+v, %v; want the file as -a reads it", in, err)
	}
	in.Close()

	for _, tt := range []struct {
		opts RunOptions
		want string
	}{
		{RunOptions{Sources: []items.Source{{Args: []string{"a"}}}, Common: CommonOptions{Input: "in.txt"}}, "-a in.txt and ::: or :::: both give items: use one"},
		{RunOptions{Sources: []items.Source{{Files: []string{filepath.Join(dir, "missing")}}, {Args: []string{"a"}}}, Common: CommonOptions{Input: "-"}},
			"open input: open " + filepath.Join(dir, "missing") + ": no such file or directory"},
	} {
		if _, err := tt.opts.openInput(nil); err == nil || err.Error() != tt.want {
			t.Errorf("openInput(%+v) = %v, want %q", tt.opts.Sources, err, tt.want)
		}
	}
}

func TestSourcesRun(t *testing.T) {
	items := filepath.Join(t.TempDir(), "items")
	os.WriteFile(items, []byte("x\ny\n"), 0o644)
	for _, tt := range []struct {
		args  []string
		stdin string
		want  string
	}{
		// {1} and {2} are the values; {} all of them.
		{[]string{"echo", "{1}-{2}", "[{}]", ":::", "a", "b", ":::", "1", "2"}, "",
			"a-1 [a 1]\na-2 [a 2]\nb-1 [b 1]\nb-2 [b 2]\n"},
		{[]string{"echo", "{2}{1}", "::::", items, ":::", "!"}, "", "!x\n!y\n"},
		// One source without placeholders: appended as the last argument.
		{[]string{"echo", "got", ":::", "a b", "c"}, "", "got a b\ngot c\n"},
		// --colsep splits the lines of stdin into {1} {2}.
		{[]string{"--colsep", ",", "--", "echo", "{2}:{1}"}, "a,1\nb,2\n", "1:a\n2:b\n"},
		{[]string{"--colsep", `\s+`, "--", "echo", "{3}"}, "a  b\tc\n", "c\n"},
	} {
		args := append([]string{"run", "-j", "1", "-k", "--summary", "none"}, tt.args...)
		code, stdout, stderr := execPace(t, tt.stdin, args...)
		if code != ExitOK || stdout != tt.want {
			t.Errorf("pace %q = exit %d, stdout %q, stderr %q; want %q", args, code, stdout, stderr, tt.want)
		}
	}
	code, _, stderr := execPace(t, "", "run", "--colsep", ",", "--", "echo", ":::", "a")
	if want := "pace: --colsep splits the lines of -a or stdin; with ::: and :::: the sources are the columns\n"; code != ExitUsage || !strings.HasPrefix(stderr, want) {
		t.Errorf("pace run --colsep with ::: = exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
}

func TestCompileColSep(t *testing.T) {
	if ro, err := (&CommonOptions{ColSep: `\t`}).readOptions(); err != nil || !ro.ColSep.MatchString("a\tb") {
		t.Errorf(`readOptions(--colsep \t) = %v, %v`, ro.ColSep, err)
	}
	for _, tt := range []struct{ in, want string }{
		{"(", `invalid argument "(" for "--colsep": want a regular expression such as '\t' or ',' (missing closing )); for a literal ( give --colsep '\('`},
		{"[^,]|,", `invalid argument "[^,]|," for "--colsep": it matches every character, so every column would be empty`},
		{"x*", `invalid argument "x*" for "--colsep": it matches the empty string, so it would split everywhere`},
	} {
		var fe *FlagError
		if _, err := (&CommonOptions{ColSep: tt.in}).readOptions(); !errors.As(err, &fe) || err.Error() != tt.want {
			t.Errorf("readOptions(--colsep %q) = %v, want a FlagError %q", tt.in, err, tt.want)
		}
	}
}

func TestPaceFlagAfterCommand(t *testing.T) {
	for _, tt := range []struct {
		args []string
		flag string // "" for none
	}{
		{[]string{"grep", "-r", "x"}, ""},
		{[]string{"curl", "--timeout", "5", "-j"}, ""},
		{[]string{"echo", "-r"}, ""},
		{[]string{"-r", "5/s"}, ""}, // the program
		{[]string{"echo", "-r", "5/s"}, "-r 5/s"},
		{[]string{"echo", "-r5/s"}, "-r5/s"},
		{[]string{"echo", "--rate", "5/s"}, "--rate"},
		{[]string{"echo", "--summary=json"}, "--summary=json"},
		{[]string{"echo", "--joblog", "x"}, "--joblog"},
		{[]string{"echo", "--redis", "redis://h"}, "--redis"},
	} {
		err := paceFlagAfterCommand(tt.args)
		switch {
		case tt.flag == "" && err != nil:
			t.Errorf("paceFlagAfterCommand(%q) = %v, want nil", tt.args, err)
		case tt.flag != "" && (err == nil || !strings.HasPrefix(err.Error(), `"`+tt.flag+`" after the command`)):
			t.Errorf("paceFlagAfterCommand(%q) = %v, want it to name %q", tt.args, err, tt.flag)
		}
	}
}
