package tmpl

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// shape is a shell command template and the output it must print for an
// item, whatever the item holds.
type shape struct {
	args  []string
	want  func(item string) string
	forks bool // the shell forks to run it: slow, so tried with fewer items
}

// trimNL removes trailing newlines, as $(...) does.
func trimNL(s string) string { return strings.TrimRight(s, "\n") }

// same is the output of a shape that prints the item on a line.
func same(s string) string { return s + "\n" }

// shapes puts placeholders in every context ParseCommand accepts. Each
// prints its values with printf, so the output shows exactly what the
// shell made of them.
var shapes = []shape{
	{args: []string{`printf '%s\n' {}`}, want: same},
	{args: []string{`printf '%s\n' "{}"`}, want: same},
	{args: []string{`printf '%s\n' '{}'`}, want: same},
	{args: []string{`printf '%s\n' "a{}b"`}, want: func(s string) string { return "a" + s + "b\n" }},
	{args: []string{`printf '%s\n' 'a'{}'b'`}, want: func(s string) string { return "a" + s + "b\n" }},
	{args: []string{`printf '%s\n' ${X:-"{}"}`}, want: same},
	{args: []string{`printf '%s\n' ${X:-'{}'}`}, want: same},
	{args: []string{`printf '%s\n' {}{}`}, want: func(s string) string { return s + s + "\n" }},
	{args: []string{`printf '%s\n' "{}"'{}'{}`}, want: func(s string) string { return s + s + s + "\n" }},
	{args: []string{`printf '%s|%s\n' {1} "{1/}"`}, want: func(s string) string { return s + "|" + basename(s) + "\n" }},
	// No placeholder: the item is appended.
	{args: []string{`printf '%s\n'`}, want: same},
	{args: []string{"printf", `'%s\n'`}, want: same},
	{args: []string{"printf", `'%s\n'`, "{}"}, want: same},
	// Next to the template's own text.
	{args: []string{`printf '%s\n' a\ {}`}, want: func(s string) string { return "a " + s + "\n" }},
	{args: []string{`printf '%s\n' ~{} ~/{}`}, want: func(s string) string { return "~" + s + "\n" + os.Getenv("HOME") + "/" + s + "\n" }},
	{args: []string{`X={}; printf '%s\n' "$X"`}, want: same},
	{args: []string{`printf '%s\n' {#}>&1`}, want: func(string) string { return "7\n" }},
	{args: []string{`case {} in *) printf '%s\n' "{}";; esac`}, want: same},
	{args: []string{"printf '%s\\n' {} # {x} ' \" ` $( comment\n"}, want: same},
	{args: []string{"# {x} '\nprintf '%s\\n' \"{}\" &&\ntrue"}, want: same},
	{args: []string{`printf '%s\n' $((1+(2))) $# "${#X}" ${X#"a"} {}`}, want: func(s string) string { return "3\n0\n0\n" + s + "\n" }},
	{args: []string{`printf '%s\n' $(({#} * 2 + {len})) "$(( ({%} - 1) ))" {}`}, want: func(s string) string { return fmt.Sprintf("%d\n0\n%s\n", 14+len(s), s) }},
	// Inside $(...), which forks.
	{args: []string{`printf '%s\n' "$(printf '%s' "{}")"`}, want: func(s string) string { return trimNL(s) + "\n" }, forks: true},
	{args: []string{`printf '%s\n' "${X:-$(printf '%s' {})}"`}, want: func(s string) string { return trimNL(s) + "\n" }, forks: true},
	{args: []string{`printf '%s\n' "x$(printf '%s' "$(printf '%s' '{}')")y"`}, want: func(s string) string { return "x" + trimNL(s) + "y\n" }, forks: true},
	{args: []string{`printf '%s\n' "$( (printf '%s' {}) )"`}, want: func(s string) string { return trimNL(s) + "\n" }, forks: true},
	{args: []string{`printf '%s\n' "$(echo "(")"{}`}, want: func(s string) string { return "(" + s + "\n" }, forks: true},
	{args: []string{"printf '%s\\n' `echo a` {}"}, want: func(s string) string { return "a\n" + s + "\n" }, forks: true},
}

// hostile are items that try every way out of their quotes.
var hostile = []string{
	"", "a", "a b", " lead", "trail ", "\ttab",
	"it's", `say "hi"`, `'`, `"`, `''`, `""`, `'"'"'`, `"'"'`,
	"$(touch pwned)", "`touch pwned`", "x; touch pwned", "x && touch pwned", "x | touch pwned",
	"a\nb", "a\ntouch pwned\n", "\n", "\n\n",
	`\`, `a\`, `\\`, `\'`, `\"`, `\$`, "\\`", `\n`,
	"$HOME", "${HOME}", "$", "$$", "$(", "${", "$((1+1))", "$[1]", "$'a'",
	"*", "?", "[a]", "~", "~root", "~/x", "#", "# x", "!", "!!", "-n", "--", "%s", "=", "A=b",
	"'; touch pwned; '", `"; touch pwned; "`, `x'$(touch pwned)'`, `"$(touch pwned)"`,
	"'\"$(touch pwned)\"'", "}", "{}", "{#}", ")", "(", "&", ";;", "<<EOF", "if", "done",
	"héllo wörld ✓", "\x01\x7f\xff",
}

// core are the hostile items that shapes which fork are tried with.
var core = []string{
	"it's", `'"'"'`, "$(touch pwned)", "`touch pwned`", "x; touch pwned", "x && touch pwned",
	"x | touch pwned", "a\ntouch pwned\n\n", `a\`, `\'`, `"; touch pwned; "`, `x'$(touch pwned)'`,
	"$HOME", "*", "~", ")", "héllo ✓",
}

// sandbox returns a directory holding only a file named sentinel, and a
// function that reports what else appeared in it (and removes it), such as
// the file of an injected "touch pwned".
func sandbox(t testing.TB) (dir string, extra func() []string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sentinel"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	return dir, func() []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			if e.Name() != "sentinel" {
				names = append(names, e.Name())
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
		return names
	}
}

// shells returns the shells to run scripts with: sh, and bash in POSIX
// mode when there is one, standing in for systems whose sh is bash.
func shells(t testing.TB) [][]string {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	s := [][]string{{"sh"}}
	if _, err := exec.LookPath("bash"); err == nil {
		s = append(s, []string{"bash", "--posix"})
	}
	return s
}

// runScript runs script with shell in dir and returns its stdout.
func runScript(t testing.TB, shell []string, dir, script string) string {
	t.Helper()
	cmd := exec.Command(shell[0], append(shell[1:], "-c", script)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LC_ALL=C"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("%s -c %q: %v, stderr %q", strings.Join(shell, " "), script, err, stderr.String())
	}
	return stdout.String()
}

// script returns the script of c for item.
func script(t testing.TB, c *Command, item string) string {
	t.Helper()
	argv, err := c.Expand(Values{Item: item, Seq: 7, Slot: 1})
	if err != nil || len(argv) != 3 || argv[0] != Shell || argv[1] != "-c" {
		t.Fatalf("Expand(%q) = %q, %v; want [sh -c script]", item, argv, err)
	}
	return argv[2]
}

func TestShellRuns(t *testing.T) {
	for _, sh := range shells(t) {
		t.Run(sh[0], func(t *testing.T) {
			t.Parallel()
			dir, extra := sandbox(t)
			for _, sp := range shapes {
				c, err := ParseCommand(sp.args, true)
				if err != nil {
					t.Errorf("ParseCommand(%q, true) = %v", sp.args, err)
					continue
				}
				items := hostile
				if sp.forks {
					items = core
				}
				// All items in one run, each script followed by a
				// separator; on a failure, each item alone for a precise
				// message.
				const sep = "\n--pace-sep--\n"
				var all, want strings.Builder
				for _, item := range items {
					all.WriteString(script(t, c, item))
					all.WriteString("\nprintf '" + sep + "'\n")
					want.WriteString(sp.want(item) + sep)
				}
				if got := runScript(t, sh, dir, all.String()); got == want.String() && extra() == nil {
					continue
				}
				for _, item := range items {
					checkRun(t, sh, dir, extra, c, sp, item)
				}
			}
		})
	}
}

// checkRun runs c for item with sh in dir, and checks that it prints
// what sp says and creates no file.
func checkRun(t testing.TB, sh []string, dir string, extra func() []string, c *Command, sp shape, item string) {
	t.Helper()
	s := script(t, c, item)
	got := runScript(t, sh, dir, s)
	if want := sp.want(item); got != want {
		t.Errorf("%s: ParseCommand(%q) with item %q: script %q printed %q, want %q", sh[0], sp.args, item, s, got, want)
	}
	if names := extra(); names != nil {
		t.Errorf("%s: ParseCommand(%q) with item %q: script %q created %q", sh[0], sp.args, item, s, names)
	}
}

// refused are shell templates that ParseCommand refuses, and the start
// of its error after `shell command "arg": `.
var refused = []struct {
	arg  string
	want string // the error after `shell command "arg": `
}{
	{"echo `{}`", "{} is inside backquotes: use $(...) instead of backquotes"},
	{"echo \"`echo {}`\"", "{} is inside backquotes: use $(...) instead of backquotes"},
	{"echo $(({}+1))", "{} is inside arithmetic, where the shell would evaluate it: compute with expr instead, as in $(expr {} + 1)"},
	{"((x={1}))", "{1} is inside arithmetic"},
	{"echo {} # {/}", "{/} is inside a comment: move it before the #, or quote the #"},
	{"echo hi #", "it has no placeholder, and the item appended at its end would be inside a comment: write {} where the item goes"},
	{"cat <<EOF\n{}\nEOF", "{} is after a here-document (<<), which pace does not follow: move it before the <<"},
	{"cat <<EOF >{}\nhi\nEOF", "{} is after a here-document (<<)"},
	{"cat <<EOF\nhi\nEOF", "it has no placeholder, and the item appended at its end would be after a here-document (<<)"},
	{"echo ${X:-{}}", `{} is unquoted inside ${...}: put it in double quotes there, as in ${X:-"{}"}`},
	{"echo ${{}}", "{} is unquoted inside ${...}"},
	{`echo "${X:-{}}"`, `{} is inside a double-quoted ${...}: drop the outer quotes and quote it inside, as in ${X:-"{}"}`},
	{`echo "${X:-"{}"}"`, "{} is after a quote inside a double-quoted ${...}"},
	{`echo "${X:-'{}'}"`, "{} is after a quote inside a double-quoted ${...}"},
	{`echo \{}`, "{} is right after a backslash, which would escape the quote put around the value: remove the backslash"},
	{`echo "\{}"`, "{} is right after a backslash"},
	{`echo ${}`, `{} is right after a $, which would expand the value: write \$ for a literal dollar sign`},
	{`echo "${}"`, "{} is right after a $"},
	{`echo $(echo ${})`, "{} is right after a $"},
	{`echo $'a' {}`, `{} is after $'...' or $"...", which shells read differently: use '...' or "..." instead`},
	{`echo $"a" {}`, `{} is after $'...' or $"..."`},
	{`echo $[1] {}`, "{} is after $[...], which shells read differently: use $((...)) instead"},
	{"echo $(case x in x) echo;; esac) {}", "{} is after a case statement inside $(...), which pace does not follow: move the case out of the $(...)"},
	{"echo `echo \"a\"` {}", "{} is after backquotes holding quotes, backslashes, parentheses, braces, # or <: use $(...) instead of backquotes"},
	{"echo ${X:-{a}} {}", "{} is after a { inside ${...}"},
	{"echo $((1+(2)) {}", "{} is after (( closed by a single )"},
	{"echo $((1+'2')) {}", "{} is after a quote inside arithmetic"},
	{"echo a\\\n{}", "{} is after a backslash at the end of a line, which pace does not follow: join the lines"},
	{"echo \"a\\\n{}\"", "{} is after a backslash at the end of a line"},
	{"echo \"$(ca\\\nse x in x) echo {};; esac)\"", "{} is after a backslash at the end of a line"},
	{"cat <\\\n<EOF\n{}\nEOF", "{} is after a backslash at the end of a line"},
	{"echo $(echo # )\necho {})", "{} is after a comment inside $(...), which older shells read differently: remove the comment"},
	// ssh joins its command into a script for the remote shell: quoted for
	// this one only, an item there would be code on the host.
	{"ssh h echo {} | wc -l", "{} is in the command of an ssh the script runs, which the remote shell reads as code"},
	{`ssh -p 22 -o BatchMode=yes u@h "cat {/}"`, "{/} is in the command of an ssh"},
	{"(timeout 5 ssh h ls {}x)", "{} is in the command of an ssh"},
	{"x=$(ssh h cat $(echo {.}))", "{.} is in the command of an ssh"},
	{"ssh h echo >out {}", "{} is in the command of an ssh"},
	// eval and trap read their arguments again as code: quoted for the
	// first reading only, an item there would run.
	{"eval echo {}", `{} is in what eval reads again as code`},
	{`eval "echo {}"`, `{} is in what eval reads again as code`},
	{"x=$(command eval 'cat {/}')", `{/} is in what eval reads again as code`},
	{"trap 'rm {}' EXIT; sleep 1", `{} is in what trap reads again as code`},
	{`trap -- "echo {.}" INT`, `{.} is in what trap reads again as code`},
	// env -S splits its string into words and runs them: no quoting of
	// the item holds there.
	{`env -S 'echo {}'`, `{} is in the string env -S splits into words`},
	{`x=$(env -i --split-string="ls {/}")`, `{/} is in the string env -S splits into words`},
	{`echo "{}`, `unterminated double quote: close it with "`},
	{`echo '{}`, "unterminated single quote: close it with '"},
	{`echo "oops`, `unterminated double quote: close it with "`},
	{"echo $(echo {}", "unterminated $(: close it with )"},
	{`echo {} ${X`, "unterminated ${: close it with }"},
	{"echo {} $((1", "unterminated ((: close it with ))"},
	{"echo {} `date", "unterminated backquote: close it with `"},
	{"echo `date", "it has no placeholder, and the item appended at its end would be inside backquotes"},
}

func TestShellRefused(t *testing.T) {
	for _, tt := range refused {
		c, err := ParseCommand([]string{tt.arg}, true)
		prefix := "shell command " + strconv.Quote(tt.arg) + ": "
		if err == nil || !strings.HasPrefix(err.Error(), prefix+tt.want) || !errors.Is(err, ErrTemplate) {
			t.Errorf("ParseCommand(%q, true) = %v, %v; want error %q wrapping ErrTemplate", tt.arg, c, err, prefix+tt.want+"...")
		}
		// Without a shell the same template is fine.
		if _, err := ParseCommand([]string{tt.arg}, false); err != nil {
			t.Errorf("ParseCommand(%q, false) = %v", tt.arg, err)
		}
	}
}

// accepted are shell templates near refused ones that are fine.
var accepted = []string{
	"echo {} `date`",                           // backquotes before or after are fine
	"echo `date` {}",                           // when they hold plain words
	"echo $((1+2)) {} $((3))",                  // so is arithmetic
	"cat >{} <<EOF\nhi\nEOF",                   // and a here-document after the last placeholder
	"echo a#{}",                                // # inside a word is no comment
	"echo $# {}",                               // nor is $#
	`echo \\{}`,                                // an escaped backslash escapes nothing more
	`echo "\\{}" '\{}'`,                        //
	`echo \${}`,                                // an escaped $ expands nothing
	`echo "\${}" '${}'`,                        //
	`echo $$ $X{}`,                             // $X, then the value: no ${
	"echo $(echo {} # )\n)",                    // a ) in a comment inside $(...), after the placeholder
	"echo \"$(echo ')' \"{}\")\"",              // and one in quotes
	"echo $( (echo {}) ) \"$(echo {})\"",       // nested parentheses
	"echo {} $(case x in x) echo;; esac)",      // case after the placeholders
	`echo ${X:-"$(echo {})"}`,                  // $(...) anywhere is a fresh start
	`echo "${X:-$(echo "{}")}"`,                //
	`X="{}" Y='{}' Z={}`,                       // assignments
	"echo {} \\",                               // a trailing backslash
	`echo "{}" '{}' "'{}'" '"{}"'`,             // quotes inside the other quotes are text
	"echo {}\n# comment\necho {}",              // comments end at a newline
	`echo {} ${#X} ${X#{x}}`,                   // # in ${...}
	`echo $( echo ")" {} ) $( echo \) {} )`,    // parentheses that close nothing
	`echo ${X:-\}}{} "${X:-\}}"{} ${X:-'}'}{}`, // braces that close nothing
	"echo {}#{} {}'#'{} $(echo)#{}",            // no comments either
	`echo $#{} $?{} $0{} "$@{}" ${X}{}`,        // parameters next to a value
	"echo $(( {#} )) $(( $(echo 1) )) {}",      // and arithmetic
	`case {} in ({}) echo "{}";; esac`,         // case outside $(...)
	"echo x{a,{}} {1..2}{} *{} ~{} a=~{}",      // braces, globs and tildes
	`echo $( case_x=1; echo {} )`,              // case only as a word
	"eval {}; trap {} EXIT; eval echo {#}",     // eval or trap of the item alone: code, as asked
	"eval echo hi; trap - EXIT; echo {}",       // a placeholder after them
	"ssh {} uptime > out/{}.txt",               // ssh's host, and a file of this shell
	"ssh h uptime; echo {} | ssh h cat",        // after its command, and ssh's stdin
	"ssh h echo {#} {%}",                       // numbers are safe anywhere
	"ssh h {}",                                 // the item as the command: code, as asked
	"grep ssh {}",                              // ssh as a word, with no command after a host
}

func TestShellAccepted(t *testing.T) {
	for _, arg := range accepted {
		if _, err := ParseCommand([]string{arg}, true); err != nil {
			t.Errorf("ParseCommand(%q, true) = %v, want no error", arg, err)
		}
	}
}

// TestShellJoin checks that arguments are joined with spaces before the
// script is read: quotes may span arguments.
func TestShellJoin(t *testing.T) {
	c, err := ParseCommand([]string{"printf", `'%s\n'`, `"a`, `{}"`}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := script(t, c, `$x`), `printf '%s\n' "a \$x"`; got != want {
		t.Errorf("script = %q, want %q", got, want)
	}
	if _, err := ParseCommand([]string{"echo", `"`, "{}"}, true); err == nil {
		t.Errorf(`ParseCommand(["echo" "\"" "{}"], true) = nil error, want unterminated double quote`)
	}
}

// In a command run without a shell, a placeholder in the string env -S
// splits into words (and runs, as a shell's script if it names one) is
// refused: env's splitting would take the item's quotes and blanks as its
// own. The string alone, or an item after it, is fine.
func TestEnvSplitString(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		refused bool
	}{
		{[]string{"env", "-S", "sh -c 'echo {}'"}, true},
		{[]string{"env", "-iS", "echo {.}"}, true},
		{[]string{"env", "-iSecho {}"}, true},
		{[]string{"env", "-u", "X", "--split-string", "echo {}"}, true},
		{[]string{"env", "--split-string=echo {}"}, true},
		{[]string{"nice", "env", "-S", "echo x{}"}, true},
		{[]string{"env", "-S", "{}"}, false},                           // the item as a command line, as asked
		{[]string{"env", "-S", "sh -c 'echo \"$1\"' sh", "{}"}, false}, // the item as an argument
		{[]string{"env", "-uS", "echo {}"}, false},                     // -u's value is S
		{[]string{"env", "A=1", "-S", "echo {}"}, false},               // -S is the command here
		{[]string{"env", "-S"}, false},
		{[]string{"env", "-{}S{}", "echo"}, true}, // the string's start after a placeholder among env's options
	} {
		_, err := ParseCommand(tt.args, false)
		if refused := err != nil; refused != tt.refused || refused && (!errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), "is in the string env -S splits into words")) {
			t.Errorf("ParseCommand(%q) = %v; want refused %v", tt.args, err, tt.refused)
		}
	}
}
