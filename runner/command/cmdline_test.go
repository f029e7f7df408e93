package command

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/pace-cli/pace/runner"
)

func TestParseLine(t *testing.T) {
	sh := func(line string) []string { return []string{"sh", "-c", line} }
	tests := []struct {
		line string
		want []string
	}{
		// Plain lines are split and run directly.
		{"echo hello world", []string{"echo", "hello", "world"}},
		{"  echo   a\tb  ", []string{"echo", "a", "b"}},
		{`printf '%s\n' "a b" 'c d'`, []string{"printf", `%s\n`, "a b", "c d"}},
		{`echo "it's"`, []string{"echo", "it's"}},
		{`echo ''`, []string{"echo", ""}},
		{"curl -sS https://example.com/a?b", sh("curl -sS https://example.com/a?b")},
		{"echo a=b", []string{"echo", "a=b"}},
		{`echo 'a;b|c>d'`, []string{"echo", "a;b|c>d"}},
		{"echo a~b x#y", []string{"echo", "a~b", "x#y"}},
		{`"FOO=1" env`, []string{"FOO=1", "env"}},
		// ANSI-C quotes as runner.Quote writes them are read here: sh may
		// be dash, which does not read them.
		{`printf '[%s]' $'a\nb' x$'\e'"y" $'it\'s' $'\377'`, []string{"printf", "[%s]", "a\nb", "x\x1by", "it's", "\xff"}},
		{`$'pr\151ntf' ok`, []string{"printf", "ok"}},
		// Bytes of invalid UTF-8 run as they are, not as U+FFFD.
		{"ls 'caf\xe9' \xff", []string{"ls", "caf\xe9", "\xff"}},
		{"echo \U0010ffe9", sh("echo \U0010ffe9")},
		// ... and left to the shell with escapes Quote does not write.
		{`echo $'\x41'`, sh(`echo $'\x41'`)},
		{`echo $'\u00e9' $'a\nb'`, sh(`echo $'\u00e9' $'a\nb'`)},
		// Shell syntax goes to sh -c.
		{"echo a | tr a b", sh("echo a | tr a b")},
		{"echo a > out", sh("echo a > out")},
		{"make && make install", sh("make && make install")},
		{"cd /tmp; ls", sh("cd /tmp; ls")},
		{"echo $(date)", sh("echo $(date)")},
		{"echo `date`", sh("echo `date`")},
		{"echo $HOME", sh("echo $HOME")},
		{`echo "$HOME"`, sh(`echo "$HOME"`)},
		{"ls *.go", sh("ls *.go")},
		{"ls ~/x", sh("ls ~/x")},
		{"FOO=1 env", sh("FOO=1 env")},
		{"echo a # comment", sh("echo a # comment")},
		{"(cd x && make)", sh("(cd x && make)")},
		{`echo a\ b`, sh(`echo a\ b`)},
		{"sleep 1 &", sh("sleep 1 &")},
	}
	for _, tt := range tests {
		got, err := parseLine(tt.line, false)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseLine(%q) = %q, %v; want %q", tt.line, got, err, tt.want)
		}
	}
}

func TestParseLineShellAlways(t *testing.T) {
	got, err := parseLine("echo hi", true)
	if want := []string{"sh", "-c", "echo hi"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseLine(echo hi, shell) = %q, %v; want %q", got, err, want)
	}
}

func TestParseLineErrors(t *testing.T) {
	for _, tt := range []struct{ line, msg string }{
		{`echo 'unbalanced`, "unterminated single quote"},
		{`echo "unbalanced`, "unterminated double quote"},
		{`echo "a" 'b`, "unterminated single quote"},
		{"   ", "empty command"},
	} {
		for _, shell := range []bool{false, true} {
			_, err := parseLine(tt.line, shell)
			if !errors.Is(err, errBadLine) || !errors.Is(err, runner.ErrPermanent) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("ParseLine(%q, %v) error = %v, want ErrBadLine saying %q", tt.line, shell, err, tt.msg)
			}
		}
	}
}

func TestQuote(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"abc", "abc"},
		{"a/b.c-d_e:f,g@h%i+j=k", "a/b.c-d_e:f,g@h%i+j=k"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `"it's"`},
		{`it's "x"`, `'it'\''s "x"'`},
		{"$(x)", "'$(x)'"},
		{"*", "'*'"},
	} {
		if got := runner.Quote(tt.in); got != tt.want {
			t.Errorf("runner.Quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// Quote's words read back through a shell: sh reads every word without
// control characters, and bash (ANSI-C quotes) every word.
func TestQuoteRoundTripsThroughSh(t *testing.T) {
	plain := []string{"plain", "a b", "it's", `"dq"`, "$(id)", "`id`", "\\", "*", "~", "-n", "", "caf\u00e9"}
	controls := []string{"a\nb", "tab\t", "\x1b[2J", "it's\r\\", "\xff\u202e", "\x01\x7f", "$'x'"}
	for _, tt := range []struct {
		shell string
		items []string
	}{{"sh", plain}, {"bash", append(plain, controls...)}} {
		if _, err := exec.LookPath(tt.shell); err != nil {
			t.Logf("no %s: skipped", tt.shell)
			continue
		}
		var script, want strings.Builder
		script.WriteString("printf '[%s]'")
		for _, it := range tt.items {
			script.WriteString(" " + runner.Quote(it))
			want.WriteString("[" + it + "]")
		}
		out, err := exec.Command(tt.shell, "-c", script.String()).Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != want.String() {
			t.Errorf("%s printed %q, want %q", tt.shell, out, want.String())
		}
	}
}

func TestJobCommandLine(t *testing.T) {
	j := runner.Job{Argv: []string{"echo", "a b", "x;y", "k=v"}}
	if got, want := j.CommandLine(), `echo 'a b' 'x;y' k=v`; got != want {
		t.Errorf("CommandLine() = %s, want %s", got, want)
	}
	j = runner.Job{Argv: []string{"A=1", "x"}}
	if got, want := j.CommandLine(), `'A=1' x`; got != want {
		t.Errorf("CommandLine() = %s, want %s", got, want)
	}
}

// FuzzParseLine checks that a line split into argv without a shell splits
// the same way again once its words are quoted back: Quote and ParseLine
// agree on what a word is.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{"echo a b", `printf '%s' "a b"`, "a | b", `x "unterminated`, "", "ls *.go", "a\tb", `"" ''`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		argv, err := parseLine(line, false)
		if err != nil || argv[0] == shellProgram && len(argv) == 3 && argv[1] == "-c" {
			return
		}
		j := runner.Job{Argv: argv}
		again, err := parseLine(j.CommandLine(), false)
		if err == nil && again[0] == shellProgram && strings.Contains(j.CommandLine(), `'\''`) {
			return // quoting a word with both quote kinds takes a backslash: sh's job
		}
		if err != nil || !slices.Equal(again, argv) {
			t.Fatalf("ParseLine(%q) = %q; quoted back %q parses as %q, %v", line, argv, j.CommandLine(), again, err)
		}
	})
}
