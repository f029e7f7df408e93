package tmpl

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCommandExpand(t *testing.T) {
	tests := []struct {
		args []string
		item string
		want []string
	}{
		// No placeholder: the item is the last argument.
		{[]string{"echo"}, "a b", []string{"echo", "a b"}},
		{[]string{"echo", "-n"}, "x", []string{"echo", "-n", "x"}},
		{[]string{"echo", "{x}", "{0}"}, "i", []string{"echo", "{x}", "{0}", "i"}},
		// Each placeholder with GNU parallel's meaning.
		{[]string{"p", "{}"}, "dir/sub/a.tar.gz", []string{"p", "dir/sub/a.tar.gz"}},
		{[]string{"p", "{.}"}, "dir/sub/a.tar.gz", []string{"p", "dir/sub/a.tar"}},
		{[]string{"p", "{/}"}, "dir/sub/a.tar.gz", []string{"p", "a.tar.gz"}},
		{[]string{"p", "{//}"}, "dir/sub/a.tar.gz", []string{"p", "dir/sub"}},
		{[]string{"p", "{/.}"}, "dir/sub/a.tar.gz", []string{"p", "a.tar"}},
		{[]string{"p", "{#}"}, "x", []string{"p", "7"}},
		{[]string{"p", "{%}"}, "x", []string{"p", "3"}},
		{[]string{"p", "{len}"}, "four", []string{"p", "4"}},
		{[]string{"p", "{1}"}, "a b", []string{"p", "a b"}},
		// Several in one argument, mixed with text; no item appended.
		{[]string{"convert", "{}", "out/{/.}-{#}.png"}, "in/cat.jpg", []string{"convert", "in/cat.jpg", "out/cat-7.png"}},
		// Unknown braces are left alone; {} still counts.
		{[]string{"p", "{x}", "{{}}"}, "i", []string{"p", "{x}", "{i}"}},
		{[]string{"p", "{"}, "i", []string{"p", "{", "i"}},
		{[]string{"jq", `{"id":{}}`}, "5", []string{"jq", `{"id":5}`}},
		// The item is one literal argument, whatever it holds.
		{[]string{"echo", "{}"}, "x; rm -rf ~", []string{"echo", "x; rm -rf ~"}},
		{[]string{"echo"}, "$(touch pwned) `id` 'q\" \\", []string{"echo", "$(touch pwned) `id` 'q\" \\"}},
		{[]string{"echo", "'{}'", `"{}"`}, "a'b", []string{"echo", "'a'b'", `"a'b"`}},
		// A placeholder in the program name.
		{[]string{"{}", "--version"}, "go", []string{"go", "--version"}},
		// Empty arguments stay.
		{[]string{"p", "", "{}"}, "i", []string{"p", "", "i"}},
		{[]string{"p", ""}, "i", []string{"p", "", "i"}},
		{[]string{""}, "", []string{"", ""}},
	}
	for _, tt := range tests {
		c, err := ParseCommand(tt.args, false)
		if err != nil {
			t.Fatalf("ParseCommand(%q, false) = %v", tt.args, err)
		}
		got, err := c.Expand(Values{Item: tt.item, Seq: 7, Slot: 3})
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseCommand(%q).Expand(%q, 7, 3) = %q, %v; want %q", tt.args, tt.item, got, err, tt.want)
		}
	}
}

func TestCommandColumns(t *testing.T) {
	c, err := ParseCommand([]string{"mv", "{1}", "{2//}/{1/.}.{3}"}, false)
	if err != nil {
		t.Fatal(err)
	}
	v := Values{Item: "a.txt\td/e/f\tbak", Columns: []string{"a.txt", "d/e/f", "bak"}}
	want := []string{"mv", "a.txt", "d/e/a.bak"}
	if got, err := c.Expand(v); err != nil || !slices.Equal(got, want) {
		t.Errorf("Expand(%+v) = %q, %v; want %q", v, got, err, want)
	}
	v = Values{Item: "a b", Columns: []string{"a", "b"}}
	got, err := c.Expand(v)
	const msg = `{3}: item "a b" has 2 columns`
	if err == nil || err.Error() != msg || !errors.Is(err, ErrColumn) {
		t.Errorf("Expand(%+v) = %q, %v; want error %q", v, got, err, msg)
	}
	sh, err := ParseCommand([]string{"echo {3}"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sh.Expand(v); err == nil || err.Error() != msg || !errors.Is(err, ErrColumn) {
		t.Errorf("shell Expand(%+v) = %q, %v; want error %q", v, got, err, msg)
	}
}

func TestCommandQueries(t *testing.T) {
	tests := []struct {
		args              []string
		shell             bool
		appends, usesItem bool
		maxColumn         int
		prog              string
		plain             bool
	}{
		{[]string{"echo"}, false, true, true, 0, "echo", true},
		{[]string{"echo", "{}"}, false, false, true, 0, "echo", true},
		{[]string{"echo", "{#}", "{%}"}, false, false, false, 0, "echo", true},
		{[]string{"echo", "{len}"}, false, false, true, 0, "echo", true},
		{[]string{"cp", "{1}", "{3/}"}, false, false, true, 3, "cp", true},
		{[]string{"{}"}, false, false, true, 0, "", false},
		{[]string{"./bin/{/}"}, false, false, true, 0, "", false},
		{[]string{"./bin/{x}"}, false, true, true, 0, "./bin/{x}", true},
		{[]string{""}, false, true, true, 0, "", true},
		// In shell mode the program is the shell's business.
		{[]string{"echo {#} | wc"}, true, false, false, 0, "", false},
		{[]string{"echo"}, true, true, true, 0, "", false},
	}
	for _, tt := range tests {
		c, err := ParseCommand(tt.args, tt.shell)
		if err != nil {
			t.Fatalf("ParseCommand(%q, %v) = %v", tt.args, tt.shell, err)
		}
		if got := c.AppendsItem(); got != tt.appends {
			t.Errorf("ParseCommand(%q, %v).AppendsItem() = %v, want %v", tt.args, tt.shell, got, tt.appends)
		}
		if got := c.UsesItem(); got != tt.usesItem {
			t.Errorf("ParseCommand(%q, %v).UsesItem() = %v, want %v", tt.args, tt.shell, got, tt.usesItem)
		}
		if got := c.MaxColumn(); got != tt.maxColumn {
			t.Errorf("ParseCommand(%q, %v).MaxColumn() = %d, want %d", tt.args, tt.shell, got, tt.maxColumn)
		}
		if prog, plain := c.Program(); prog != tt.prog || plain != tt.plain {
			t.Errorf("ParseCommand(%q, %v).Program() = %q, %v; want %q, %v", tt.args, tt.shell, prog, plain, tt.prog, tt.plain)
		}
	}
}

func TestParseCommandEmpty(t *testing.T) {
	for _, shell := range []bool{false, true} {
		c, err := ParseCommand(nil, shell)
		if err == nil || err.Error() != "empty command" || !errors.Is(err, ErrTemplate) {
			t.Errorf("ParseCommand(nil, %v) = %v, %v; want error \"empty command\" wrapping ErrTemplate", shell, c, err)
		}
	}
}

// TestShellScript checks the script of some shell commands; TestShellRuns
// checks what sh makes of many more.
func TestShellScript(t *testing.T) {
	tests := []struct {
		args []string
		item string
		want string
	}{
		{[]string{"echo {} | wc -c"}, "a b", "echo 'a b' | wc -c"},
		{[]string{"echo"}, "x; rm -rf ~", "echo 'x; rm -rf ~'"},
		{[]string{"cp", "{}", "{.}.bak"}, "it's", `cp "it's" "it's".bak`},
		{[]string{"echo"}, `'"`, `echo ''\''"'`},
		// Even a plain word is quoted: 7> would redirect descriptor 7.
		{[]string{"echo", "{#}>out"}, "x", "echo '7'>out"},
		{[]string{"echo '{}'"}, "it's", `echo 'it'\''s'`},
		{[]string{`echo "{}"`}, "$a`b`\"c\\d'e", `echo "\$a\` + "`b\\`" + `\"c\\d'e"`},
		{[]string{`echo "$(echo '{}' "{}" {})"`}, "'", `echo "$(echo ''\''' "'" "'")"`},
		{[]string{`echo ${X:-"{}"} ${X:-'{}'}`}, "$'", `echo ${X:-"\$'"} ${X:-'$'\'''}`},
		{[]string{"echo {} # a comment, {x} and all"}, "a", "echo 'a' # a comment, {x} and all"},
	}
	for _, tt := range tests {
		c, err := ParseCommand(tt.args, true)
		if err != nil {
			t.Errorf("ParseCommand(%q, true) = %v", tt.args, err)
			continue
		}
		got, err := c.Expand(Values{Item: tt.item, Seq: 7, Slot: 1})
		want := []string{"sh", "-c", tt.want}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseCommand(%q, true).Expand(%q) = %q, %v; want %q", tt.args, tt.item, got, err, want)
		}
	}
}

// In shell mode, a shell the script runs with -c and a quoted script
// holding a placeholder is refused; a number there is safe, and a
// placeholder outside that script is quoted as ever.
func TestCommandNestedShell(t *testing.T) {
	for _, src := range []string{`sh -c 'echo {}'`, `echo a | bash -c "cat {}"`} {
		if _, err := ParseCommand([]string{src}, true); !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), "as an argument") {
			t.Errorf("ParseCommand(%q, true) = %v; want ErrTemplate saying to pass it as an argument", src, err)
		}
	}
	for _, src := range []string{`sh -c 'echo {#}'`, `echo "{}"; sh -c 'ls'`, `sh -c 'echo "$1"' sh {}`, `echo sh -c {}`} {
		if _, err := ParseCommand([]string{src}, true); err != nil {
			t.Errorf("ParseCommand(%q, true) = %v; want it accepted", src, err)
		}
	}
}

// A shell's -c script is code: the values in it are quoted as in shell
// mode, so that an item stays one word, and a script that is a
// placeholder alone runs the item as code, as asked.
func TestCommandShellScriptQuoted(t *testing.T) {
	tests := []struct {
		args []string
		item string
		want []string
	}{
		{[]string{"sh", "-c", "echo {}"}, "x; touch pwned", []string{"sh", "-c", "echo 'x; touch pwned'"}},
		{[]string{"/bin/bash", "-c", "echo '{}'"}, "a'b", []string{"/bin/bash", "-c", `echo 'a'\''b'`}},
		{[]string{"bash", "-e", "-o", "pipefail", "-c", "echo \"{}\" | cat", "name"}, "$(id)", []string{"bash", "-e", "-o", "pipefail", "-c", `echo "\$(id)" | cat`, "name"}},
		{[]string{"dash", "-ec", "echo {#} {}"}, "`id`", []string{"dash", "-ec", "echo '7' '`id`'"}},
		{[]string{"busybox", "sh", "-c", "echo {}"}, "a b", []string{"busybox", "sh", "-c", "echo 'a b'"}},
		{[]string{"sh", "-c", "--", "echo {}"}, "a b", []string{"sh", "-c", "--", "echo 'a b'"}},
		// The item as the whole script: code, as asked.
		{[]string{"sh", "-c", "{}"}, "echo a; echo b", []string{"sh", "-c", "echo a; echo b"}},
		// Values after the script are arguments, not code.
		{[]string{"sh", "-c", `echo "$1"`, "sh", "{}"}, "x; y", []string{"sh", "-c", `echo "$1"`, "sh", "x; y"}},
		// A script file, not -c; a program that is not a shell.
		{[]string{"sh", "run.sh", "{}"}, "x; y", []string{"sh", "run.sh", "x; y"}},
		{[]string{"python3", "-c", "print({})"}, "1", []string{"python3", "-c", "print(1)"}},
		{[]string{"shfmt", "-c", "{}"}, "x y", []string{"shfmt", "-c", "x y"}},
		// A shell behind a program that runs it is a shell all the same.
		{[]string{"timeout", "5", "sh", "-c", "echo {}"}, "$(id)", []string{"timeout", "5", "sh", "-c", "echo '$(id)'"}},
		{[]string{"env", "-i", "/bin/sh", "-c", "echo {}"}, "a;b", []string{"env", "-i", "/bin/sh", "-c", "echo 'a;b'"}},
		{[]string{"nice", "-n", "5", "bash", "-ec", "echo {}"}, "`id`", []string{"nice", "-n", "5", "bash", "-ec", "echo '`id`'"}},
		{[]string{"docker", "exec", "box", "sh", "-c", "echo {}"}, "a b", []string{"docker", "exec", "box", "sh", "-c", "echo 'a b'"}},
		{[]string{"bash", "--rcfile", "/dev/null", "-c", "echo {}"}, "$(id)", []string{"bash", "--rcfile", "/dev/null", "-c", "echo '$(id)'"}},
		// ssh's command is code to the remote shell: quoted as a script,
		// in one word (ssh joins its words with spaces anyway).
		{[]string{"ssh", "host", "echo", "{}"}, "$(id)", []string{"ssh", "host", "echo '$(id)'"}},
		{[]string{"ssh", "-p", "22", "-o", "BatchMode=yes", "-vi", "key", "u@h", "touch", "{}"}, "a b", []string{"ssh", "-p", "22", "-o", "BatchMode=yes", "-vi", "key", "u@h", "touch 'a b'"}},
		{[]string{"ssh", "-p22", "h", "cat"}, "x;y", []string{"ssh", "-p22", "h", "cat 'x;y'"}}, // the item appended, quoted
		{[]string{"timeout", "9", "ssh", "h", "ls", "{}"}, "`id`", []string{"timeout", "9", "ssh", "h", "ls '`id`'"}},
		{[]string{"ssh", "h", "{}"}, "uptime; w", []string{"ssh", "h", "uptime; w"}}, // the item as the command: code, as asked
		{[]string{"ssh", "{}", "uptime"}, "h1", []string{"ssh", "h1", "uptime"}},     // the host, not the command
		// su, runuser and flock run their -c's value as a shell's script.
		{[]string{"su", "-", "postgres", "-c", "psql -c {}"}, "$(id)", []string{"su", "-", "postgres", "-c", "psql -c '$(id)'"}},
		{[]string{"runuser", "-l", "u", "--command", "echo {/}"}, "a;b", []string{"runuser", "-l", "u", "--command", "echo 'a;b'"}},
		{[]string{"flock", "/tmp/lock", "-c", "echo {}"}, "`id`", []string{"flock", "/tmp/lock", "-c", "echo '`id`'"}},
		{[]string{"su", "-c", "{}"}, "id; w", []string{"su", "-c", "id; w"}}, // the item as the script: code, as asked
		// Their script attached to its option, or after a cluster.
		{[]string{"su", "root", "-cecho {}"}, "$(id)", []string{"su", "root", "-cecho '$(id)'"}},
		{[]string{"su", "root", "--command=echo {}"}, "$(id)", []string{"su", "root", "--command=echo '$(id)'"}},
		{[]string{"runuser", "-u", "u", "--session-command=ls {}"}, "a b", []string{"runuser", "-u", "u", "--session-command=ls 'a b'"}},
		{[]string{"su", "-lc", "echo {}", "root"}, "`id`", []string{"su", "-lc", "echo '`id`'", "root"}},
		{[]string{"su", "-lcecho {}"}, "a;b", []string{"su", "-lcecho 'a;b'"}},
		{[]string{"flock", "-n", "/tmp/lock", "-c", "echo {}"}, "a b", []string{"flock", "-n", "/tmp/lock", "-c", "echo 'a b'"}},
		{[]string{"su", "--command={}"}, "id; w", []string{"su", "--command=id; w"}},     // the item as the script
		{[]string{"su", "-s/bin/csh", "{}"}, "x y", []string{"su", "-s/bin/csh", "x y"}}, // -s's value, not -c
		{[]string{"flock", "-w", "5", "{}", "true"}, "x y", []string{"flock", "-w", "5", "x y", "true"}},
		{[]string{"flock", "{}", "-c", "true"}, "x y", []string{"flock", "x y", "-c", "true"}},
		// "sh" as a value after the script is an argument, not a shell.
		{[]string{"sh", "-c", `echo "$1"`, "sh", "{}"}, "-c", []string{"sh", "-c", `echo "$1"`, "sh", "-c"}},
	}
	for _, tt := range tests {
		c, err := ParseCommand(tt.args, false)
		if err != nil {
			t.Fatalf("ParseCommand(%q, false) = %v", tt.args, err)
		}
		got, err := c.Expand(Values{Item: tt.item, Seq: 7, Slot: 3})
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseCommand(%q).Expand(%q) = %q, %v; want %q", tt.args, tt.item, got, err, tt.want)
		}
	}
	// Where a value cannot be quoted safely, the template is refused.
	for _, args := range [][]string{
		{"sh", "-c", "echo `{}`"},
		{"bash", "-c", "echo {} # {}"},
		{"sh", "-c", "echo '{}"},
		// A shell within the script: the item would be code to it.
		{"sh", "-c", `sh -c 'echo {}'`},
		{"sh", "-c", `x=1; bash -ec "echo {}"`},
		{"timeout", "5", "sh", "-c", `sh -c "echo {/}"`},
		{"sh", "-c", `x=$(sh -c "echo {}"); echo "$x"`},
		{"sh", "-c", `sh -c "echo "{}`}, // the inner script goes on past the quote
		{"sh", "-c", `su - u -c "echo {}"`},
		{"sh", "-c", `su - u -c"echo {}"`},
		{"sh", "-c", `su - u --command="echo {}"`},
		{"sh", "-c", `su - u -lc "echo {}"`},
		{"sh", "-c", `su u -c "a; echo {}"`},
		{"sh", "-c", `sh -c echo\ {}`},
		{"bash", "-c", `sh -c x{} && true`},
		// ssh within the script: the item would be code to the remote shell.
		{"sh", "-c", "ssh host echo {}"},
	} {
		if _, err := ParseCommand(args, false); !errors.Is(err, ErrTemplate) {
			t.Errorf("ParseCommand(%q, false) = %v; want ErrTemplate", args, err)
		}
	}
}
