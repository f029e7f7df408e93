package tmpl

import (
	"path"
	"slices"
	"strings"
)

// Shell is the program that runs a Command in shell mode, as
// Shell -c script.
const Shell = "sh"

// Command is a command line whose arguments may hold placeholders (see
// the package comment), expanded once per item by Expand.
//
// Without a shell, each argument is expanded on its own and never passes
// through a shell: an item "x; rm -rf ~" becomes exactly that one
// argument. A Command without any placeholder gets the item appended as
// its last argument (AppendsItem).
//
// In shell mode the arguments are joined with spaces into one script run
// as Shell -c script, so that the template may use pipes, redirections and
// the rest of the shell, and every substituted value (the appended item
// too) is quoted for the place where it stands, so that it is one literal
// word to the shell: see ParseCommand for what that allows.
//
// A Command is immutable and safe for concurrent use.
type Command struct {
	args    [][]field // each argument's fields; without a shell
	script  []field   // the whole script; in shell mode
	shell   bool
	appends bool
	sum     summary
	prog    string // the program, if plain
	plain   bool
}

// ParseCommand parses args, a command and its arguments; with shell set
// the command runs as a shell script.
//
// In shell mode ParseCommand reads the template's text as a POSIX shell
// would, to know how to quote each value: a placeholder may stand bare, in
// single or double quotes, inside $(...) (to any depth), and inside ${...}
// if in quotes there, as in ${X:-"{}"}. {#}, {%} and {len}, which are
// numbers, may also stand in arithmetic, as in $(({%} - 1)). ParseCommand
// refuses a template where it cannot quote a value safely: a placeholder
// inside backquotes, arithmetic, a comment, a here-document or a
// double-quoted ${...}, unquoted inside ${...}, right after a $ or a
// backslash, or after a construct whose quoting shells disagree on, such
// as $'...'; and a template with an unterminated quote or substitution.
// The refusal is an error wrapping ErrTemplate that quotes the template
// and says what to write instead.
func ParseCommand(args []string, shell bool) (*Command, error) {
	if len(args) == 0 {
		return nil, templateErrorf("empty command")
	}
	c := &Command{shell: shell}
	for _, a := range args {
		fields := parse(a)
		c.sum.add(fields)
		c.args = append(c.args, fields)
	}
	c.appends = !c.sum.placeholders
	c.sum.usesItem = c.sum.usesItem || c.appends
	if !shell {
		if !hasPlaceholder(c.args[0]) {
			c.prog, c.plain = args[0], true
		}
		// A shell run as sh -c SCRIPT reads SCRIPT as code: there each
		// value is quoted as in shell mode, so that an item stays one
		// word. A script that is a placeholder alone runs the item as
		// code, which is what sh -c {} asks for. The shell may come
		// after a program that runs it (env, nice, timeout, sudo, xargs,
		// docker exec ... sh -c): every plain argument naming a shell
		// is looked at, so that a wrapper does not turn quoting off.
		// Up to end, args and c.args are word for word; past it, ssh's
		// remote command is one script, quoted already.
		end, err := c.quoteRemote(args)
		if err != nil {
			return nil, err
		}
		for j := 0; j < end; j++ {
			if hasPlaceholder(c.args[j]) {
				continue
			}
			if k, opt := envSplitArg(args[j:end]); k >= 0 {
				f := c.args[j+k]
				if opt > 0 && f[0].kind == literal && len(f[0].text) >= opt { // the option's text starts the first field
					first := f[0]
					first.text = first.text[opt:]
					f = append([]field{first}, f[1:]...)
					if first.text == "" {
						f = f[1:]
					}
				}
				if ph, ok := codePlaceholder(f); ok {
					return nil, templateErrorf("command %q: %s "+envSplitWhy, strings.Join(args, " "), ph)
				}
			}
			i, opt := scriptArg(args[j:end])
			if i < 0 {
				continue
			}
			i += j
			// A script attached to its option (su -c'cmd', --command=cmd)
			// is that argument after the option's opt bytes.
			alone := len(c.args[i]) == 1 || len(c.args[i]) == 2 && opt > 0 && c.args[i][0].kind == literal && len(c.args[i][0].text) == opt
			if hasPlaceholder(c.args[i]) && !alone {
				script, err := shellScript(args[i:i+1], c.args[i:i+1], false)
				if err != nil {
					return nil, err
				}
				c.args[i] = script
			}
			j = i
		}
		return c, nil
	}
	script, err := shellScript(args, c.args, c.appends)
	if err != nil {
		return nil, err
	}
	c.script, c.args = script, nil
	return c, nil
}

// shellScript joins args, parsed into fields, into one script with a
// space between arguments, plus the item if appendItem is set, and sets
// the quoting of every placeholder.
func shellScript(args []string, fields [][]field, appendItem bool) ([]field, error) {
	var script []field
	addText := func(s string) {
		if n := len(script); n > 0 && script[n-1].kind == literal {
			script[n-1].text += s
		} else {
			script = append(script, field{text: s})
		}
	}
	for i, a := range fields {
		if i > 0 {
			addText(" ")
		}
		for _, f := range a {
			if f.kind == literal {
				addText(f.text)
			} else {
				script = append(script, f)
			}
		}
	}
	if appendItem {
		addText(" ")
		script = append(script, field{text: "{}", kind: itemKind})
	}

	src := strings.Join(args, " ")
	if ph, ok := nestedScriptPlaceholder(src); ok {
		return nil, templateErrorf("shell command %q: %s is in the script of a shell the script runs (sh -c '...'): quoted for the outer shell only, the inner one would run the item as code; "+
			"pass it to the inner shell as an argument, as in sh -c 'echo \"$1\"' sh {}", src, ph)
	}
	if ph, ok := remoteScriptPlaceholder(src); ok {
		return nil, templateErrorf("shell command %q: %s is in the command of an ssh the script runs, which the remote shell reads as code: quoted for this shell only, the remote one would run the item as code; "+
			"run ssh as the command itself (pace run -- ssh HOST 'cmd {} | wc -l'), where pace quotes the item for the remote shell", src, ph)
	}
	if ph, name, ok := evalScriptPlaceholder(src); ok {
		if name == "env -S" {
			return nil, templateErrorf("shell command %q: %s "+envSplitWhy, src, ph)
		}
		sig := map[string]string{"trap": " EXIT"}[name]
		return nil, templateErrorf("shell command %q: %s is in what %s reads again as code: quoted for the shell's first reading only, it would run the item as code there; "+
			"pass it as an argument and quote it where %s reads it, as in sh -c '%s \"echo \\\"\\$1\\\"\"%s' sh {}", src, ph, name, name, name, sig)
	}
	l := newLexer()
	for i := range script {
		f := &script[i]
		if f.kind == literal {
			l.lit(f.text)
			continue
		}
		q, why := l.value(f.numeric())
		if why != nil {
			if appendItem && i == len(script)-1 {
				return nil, templateErrorf("shell command %q: it has no placeholder, and the item appended at its end would be %s: write {} where the item goes", src, why.where)
			}
			return nil, templateErrorf("shell command %q: %s is %s: %s", src, f.text, why.where, why.fix)
		}
		f.quote = q
	}
	if what, closer := l.unterminated(); what != "" {
		return nil, templateErrorf("shell command %q: unterminated %s: close it with %s", src, what, closer)
	}
	return script, nil
}

// quoteRemote makes the command of ssh HOST COMMAND... one script whose
// values are quoted as in shell mode: ssh joins COMMAND's words with
// spaces and the remote shell reads them as code, so that an item there
// would otherwise run on the host. The item appended to such a command
// goes into the script, quoted too. A remote command that is the item
// alone (ssh host {}) runs it as code, as asked.
//
// It returns the index of the script in c.args, or len(args) if it made
// none.
func (c *Command) quoteRemote(args []string) (int, error) {
	k := -1
	for j := 0; j < len(args) && k < 0; j++ {
		if !hasPlaceholder(c.args[j]) {
			k = remoteCommandArg(args[j:])
			if k > 0 {
				k += j
			}
		}
	}
	if k < 0 || !c.appends && !slices.ContainsFunc(c.args[k:], hasPlaceholder) {
		return len(args), nil
	}
	if !c.appends && len(args) == k+1 && len(c.args[k]) == 1 {
		return len(args), nil // ssh host {}
	}
	script, err := shellScript(args[k:], c.args[k:], c.appends)
	if err != nil {
		return 0, err
	}
	c.args = append(c.args[:k], script)
	c.appends = false
	return k, nil
}

// sshValueOptions are ssh's options that take a value.
const sshValueOptions = "BbcDEeFIiJLlmOoPpQRSWw"

// remoteCommandArg returns the index in args of the first word of the
// remote command of ssh [options] destination command..., or -1: args[0]
// is plain and names ssh, and a command follows the destination.
func remoteCommandArg(args []string) int {
	if path.Base(args[0]) != "ssh" {
		return -1
	}
	i := 1
	for ; i < len(args) && len(args[i]) > 1 && args[i][0] == '-'; i++ {
		if args[i] == "--" {
			i++
			break
		}
		for n, ch := range args[i][1:] {
			if strings.ContainsRune(sshValueOptions, ch) {
				if n == len(args[i])-2 {
					i++ // the value is the next word
				}
				break
			}
		}
	}
	if i+1 >= len(args) {
		return -1 // no command: a login shell
	}
	return i + 1
}

// nestedScriptPlaceholder finds, in src (a shell script), a placeholder
// in the script of a shell the script runs, as in sh -c 'echo {}' or
// sh -c echo\ {} within the script: the outer quoting makes the item one
// word of the outer script, which the inner shell then reads as code. A
// script that is a placeholder alone (sh -c {}) runs the item as code, as
// asked. It returns the placeholder as written.
func nestedScriptPlaceholder(src string) (string, bool) {
	words := scriptWords(src)
	for w := 0; w < len(words); w++ {
		name := path.Base(commandWord(words[w]))
		c := false
		k := w + 1
		opt := 0 // the option's bytes before a script attached to it
		switch {
		case shellPrograms[name]:
			// Options up to one holding c; then the script.
			for ; k < len(words) && len(words[k]) > 1 && (words[k][0] == '-' || words[k][0] == '+'); k++ {
				c = c || words[k][0] == '-' && !strings.HasPrefix(words[k], "--") && strings.ContainsRune(words[k][1:], 'c')
			}
		case commandPrograms[name]:
			// Up to its -c, within the command; then the script, or
			// the script attached to it (-c"cmd", --command=cmd).
			end := k // past the last word of the command: a script word may hold ; & |
			for end < len(words) && !strings.ContainsAny(words[end], ";&|") {
				end++
			}
			if i, o := commandScriptArg(append([]string{name}, words[k:min(end+1, len(words))]...)); i > 0 {
				c, k, opt = true, k+i-1, o
			}
		}
		if !c || k >= len(words) {
			continue
		}
		// Where that word starts in src, from the name's position on,
		// and where it ends: quoted or not (sh -c 'echo '{}, sh -c
		// echo\ {}), all of it is the inner shell's code.
		at := wordOffset(src, words, k)
		if at < 0 || at+opt >= len(src) {
			continue
		}
		at += opt
		// sh -c {} alone runs the item as the script: code, as asked.
		if ph, ok := codePlaceholder(parse(src[at:shellWordEnd(src, at)])); ok {
			return ph, true
		}
	}
	return "", false
}

// remoteScriptPlaceholder finds, in src (a shell script), a placeholder
// in the remote command of an ssh the script runs, as in ssh h echo {}
// within the script: ssh joins that command's words into a script for
// the remote shell, so that an item quoted for this script only is code
// there. The command ends at an unquoted ; & | ) or newline; a
// redirection and its file are this shell's, not the remote one's. A
// command that is a placeholder alone (ssh host {}) runs the item as
// code, as asked. It returns the placeholder as written.
func remoteScriptPlaceholder(src string) (string, bool) {
	words := scriptWords(src)
	for w := range words {
		if path.Base(commandWord(words[w])) != "ssh" {
			continue
		}
		k := remoteCommandArg(append([]string{"ssh"}, words[w+1:]...))
		if k < 0 {
			continue
		}
		at := wordOffset(src, words, w+k)
		if at < 0 {
			continue
		}
		// ssh host {} alone runs the item as the command: code, as asked.
		if ph, ok := codePlaceholder(parse(strings.TrimRight(localCommandRest(src[at:]), " \t"))); ok {
			return ph, true
		}
	}
	return "", false
}

// evalScriptPlaceholder finds, in src (a shell script), a placeholder
// that the shell reads twice: in the arguments of eval (eval echo {}),
// which it joins and reads again as code, or in the action of trap (trap
// 'echo {}' EXIT), which it reads as code when the signal comes. A
// placeholder alone (eval {}) runs the item as code, as asked. So does
// the string of env -S, which env splits into words and runs (name "env
// -S"). It returns the placeholder as written and the builtin's name.
func evalScriptPlaceholder(src string) (string, string, bool) {
	words := scriptWords(src)
	for w := 0; w+1 < len(words); w++ {
		name := commandWord(words[w])
		k := w + 1
		var code string
		switch name {
		case "eval":
			at := wordOffset(src, words, k)
			if at < 0 {
				continue
			}
			code = strings.TrimRight(localCommandRest(src[at:]), " \t")
		case "trap":
			if words[k] == "--" {
				k++
			}
			if k >= len(words) || strings.HasPrefix(words[k], "-") {
				continue // trap -p, trap -l: no action
			}
			at := wordOffset(src, words, k)
			if at < 0 {
				continue
			}
			code = src[at:shellWordEnd(src, at)]
		default:
			e, opt := envSplitArg(append([]string{name}, words[w+1:]...))
			if e < 0 {
				continue
			}
			at := wordOffset(src, words, w+e)
			if at < 0 {
				continue
			}
			end := shellWordEnd(src, at)
			if end < at {
				continue
			}
			if at+opt > end {
				opt = 0 // the word ends within the option as written: all of it
			}
			name, code = "env -S", src[at+opt:end]
		}
		if ph, ok := codePlaceholder(parse(code)); ok {
			return ph, name, true
		}
	}
	return "", "", false
}

// scriptWords splits src, a shell script, at blanks (a first cut at its
// words, for finding the programs it runs).
func scriptWords(src string) []string {
	return strings.FieldsFunc(src, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' })
}

// codePlaceholder returns the first placeholder in fields, the text
// another shell reads as code (a nested shell's script, ssh's remote
// command), unless fields are a placeholder alone, which runs the item as
// code as asked; numeric placeholders ({#}, {%}) are safe anywhere.
func codePlaceholder(fields []field) (string, bool) {
	if len(fields) == 1 && fields[0].kind != literal {
		return "", false
	}
	for _, f := range fields {
		if f.kind != literal && !f.numeric() {
			return f.text, true
		}
	}
	return "", false
}

// localCommandRest returns the text of src up to the end of its first
// command (an unquoted ; & | ) or newline that closes no $( or ( opened
// in it), without its redirections' operators and files.
func localCommandRest(src string) string {
	var b strings.Builder
	var q shellQuotes
	for i := 0; i < len(src); {
		next, top := q.step(src, i)
		switch c := src[i]; {
		case top && strings.IndexByte(";&|)\n", c) >= 0:
			return b.String()
		case top && (c == '>' || c == '<'):
			// The operator (>, >>, >|, >&, <, <>), blanks, then the file.
			for i+1 < len(src) && strings.IndexByte("<>|&", src[i+1]) >= 0 {
				i++
			}
			for i+1 < len(src) && (src[i+1] == ' ' || src[i+1] == '\t') {
				i++
			}
			for i+1 < len(src) && strings.IndexByte(" \t\n;&|()<>", src[i+1]) < 0 {
				i++
			}
			b.WriteByte(' ')
			i++
			continue
		}
		b.WriteString(src[i:next])
		i = next
	}
	return b.String()
}

// shellWordEnd returns where the word of the shell script src that starts
// at src[at] ends: at the first blank, ; & | < > or ) outside quotes and
// parentheses it opened, or at the end of src.
func shellWordEnd(src string, at int) int {
	var q shellQuotes
	for i := at; i < len(src); {
		next, top := q.step(src, i)
		if top && strings.IndexByte(" \t\n;&|<>)", src[i]) >= 0 {
			return i
		}
		i = next
	}
	return len(src)
}

// shellQuotes follows a shell script's quotes, backslashes and
// parentheses, a byte at a time (step).
type shellQuotes struct {
	depth int  // parentheses opened and not closed
	quote byte // the quote open, or 0
}

// step reads src[i]: it returns where the next byte to read is (past the
// byte a backslash escapes), and whether src[i] stands outside quotes and
// the parentheses opened so far, where it may end a word or a command (a
// ')' that closes none does).
func (q *shellQuotes) step(src string, i int) (next int, top bool) {
	switch c := src[i]; {
	case q.quote == '\'':
		if c == '\'' {
			q.quote = 0
		}
	case c == '\\' && i+1 < len(src):
		return i + 2, false
	case q.quote == '"':
		if c == '"' {
			q.quote = 0
		}
	case c == '\'' || c == '"':
		q.quote = c
	case c == '(':
		q.depth++
	case c == ')' && q.depth > 0:
		q.depth--
	default:
		return i + 1, q.depth == 0
	}
	return i + 1, false
}

// commandWord returns what may be a command's name in word, a field of a
// script split at blanks: the text after any operator, parenthesis,
// quote or assignment it starts with, as sh in x=$(sh or (sh.
func commandWord(word string) string {
	return word[strings.LastIndexAny(word, ";&|({`$\"'=")+1:]
}

// wordOffset returns where words[k], a field of src split at blanks,
// starts in src, or -1.
func wordOffset(src string, words []string, k int) int {
	at := 0
	for i := 0; i <= k; i++ {
		j := strings.Index(src[at:], words[i])
		if j < 0 {
			return -1
		}
		if i == k {
			return at + j
		}
		at += j + len(words[i])
	}
	return -1
}

// shellPrograms are the programs whose -c option takes a script of shell code.
var shellPrograms = map[string]bool{
	"sh": true, "bash": true, "dash": true, "ash": true, "zsh": true,
	"ksh": true, "ksh93": true, "mksh": true, "pdksh": true, "yash": true,
	"posh": true, "rbash": true,
}

// commandPrograms are the programs that run the value of their -c (or
// --command) option as a shell's script: su - user -c 'cmd', runuser,
// flock FILE -c 'cmd'. (script -c 'cmd' does too, but "script" is too
// common a word among other programs' arguments to be told apart.)
var commandPrograms = map[string]bool{"su": true, "runuser": true, "flock": true}

// commandArgLetters are the short options of commandPrograms that take a
// value (su -s SHELL, -g, -G, -w; flock -w SECS, -E CODE): in a cluster,
// the rest of it is their value, not more options.
const commandArgLetters = "sgGwE"

// commandScriptArg is scriptArg for one of commandPrograms.
func commandScriptArg(args []string) (i, opt int) {
	for i = 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c" || a == "--command" || a == "--session-command":
			if i+1 < len(args) {
				return i + 1, 0
			}
			return -1, 0
		case strings.HasPrefix(a, "--command="):
			return i, len("--command=")
		case strings.HasPrefix(a, "--session-command="):
			return i, len("--session-command=")
		case len(a) > 2 && a[0] == '-' && a[1] != '-':
			// A cluster: -lc SCRIPT, -cSCRIPT, -lcSCRIPT.
			if j, o, ok := clusterValue(args, i, 'c', commandArgLetters); ok {
				return j, o
			}
		}
	}
	return -1, 0
}

// clusterValue finds the value of option letter in the option cluster
// args[i] (-lc VALUE, -lcVALUE), scanning its letters up to one of stop
// (letters whose value is the rest of the cluster): the index of the
// argument holding the value and the length of the option text before it
// there (0 for a value given apart), or -1 when the letter has none. ok
// is false when the cluster does not hold the letter.
func clusterValue(args []string, i int, letter byte, stop string) (at, opt int, ok bool) {
	a := args[i]
	for k := 1; k < len(a) && strings.IndexByte(stop, a[k]) < 0; k++ {
		switch {
		case a[k] != letter:
		case k+1 < len(a):
			return i, k + 1, true
		case i+1 < len(args):
			return i + 1, 0, true
		default:
			return -1, 0, true
		}
	}
	return 0, 0, false
}

// envSplitWhy says why a placeholder in env -S's string is refused, and
// what to do instead.
const envSplitWhy = "is in the string env -S splits into words (and runs: as a shell's script, if it names one), where no quoting of the item holds; " +
	"give the item as an argument of its own, after the string"

// envSplitArg returns the index in args of the string that env -S (or
// --split-string) splits into words, or -1: args[0] is plain and names
// env, and an option before its first NAME=VALUE or command is -S. opt is
// the length of the option's text before the string in its argument (0
// for a string given apart).
func envSplitArg(args []string) (i, opt int) {
	if path.Base(args[0]) != "env" {
		return -1, 0
	}
	for i = 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-S" || a == "--split-string":
			if i+1 < len(args) {
				return i + 1, 0
			}
			return -1, 0
		case strings.HasPrefix(a, "--split-string="):
			return i, len("--split-string=")
		case a == "-u" || a == "-C" || a == "--unset" || a == "--chdir":
			i++ // its value
		case strings.HasPrefix(a, "--") && a != "--":
		case len(a) > 1 && a[0] == '-':
			// A cluster: -iS STRING, -iSSTRING; -u and -C take the rest.
			if j, o, ok := clusterValue(args, i, 'S', "uC"); ok {
				return j, o
			}
		default:
			return -1, 0 // "--", "-", NAME=VALUE or the command: no more options
		}
	}
	return -1, 0
}

// scriptArg returns the index in args of the script of a shell run as
// SHELL [options] -c SCRIPT (busybox sh too), or -1: args[0] is plain and
// names a shell, and some option cluster before the first operand holds
// c (-c, -ec, -xc), which makes the first operand the script. For one of
// commandPrograms, the script is the value of its first -c or --command,
// given apart or attached (-cSCRIPT, -lcSCRIPT, --command=SCRIPT); opt is
// then the length of the option's text before the script in its argument
// (0 for a script given apart).
func scriptArg(args []string) (i, opt int) {
	i = 1
	switch b := path.Base(args[0]); {
	case b == "busybox" && len(args) > 1 && args[1] == "sh":
		i = 2
	case commandPrograms[b]:
		return commandScriptArg(args)
	case !shellPrograms[b]:
		return -1, 0
	}
	script := false
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if script && i+1 < len(args) {
				return i + 1, 0
			}
			return -1, 0
		case a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++ // an option name, or bash's file, follows
		case strings.HasPrefix(a, "--"):
			// a long option (--norc, --login)
		case len(a) > 1 && a[0] == '-':
			script = script || strings.ContainsRune(a[1:], 'c')
		case len(a) > 1 && a[0] == '+':
		default:
			if script {
				return i, 0
			}
			return -1, 0 // a script file
		}
	}
	return -1, 0
}

// hasPlaceholder reports whether fields hold a placeholder.
func hasPlaceholder(fields []field) bool {
	for i := range fields {
		if fields[i].kind != literal {
			return true
		}
	}
	return false
}

// Expand returns the argv for v: the expanded arguments, or in shell mode
// Shell, "-c" and the script. Its only error is a column placeholder that
// v's item cannot fill, wrapping ErrColumn.
func (c *Command) Expand(v Values) ([]string, error) {
	if c.shell {
		script, err := expand(c.script, &v)
		if err != nil {
			return nil, err
		}
		return []string{Shell, "-c", script}, nil
	}
	argv := make([]string, 0, len(c.args)+1)
	for _, fields := range c.args {
		a, err := expand(fields, &v)
		if err != nil {
			return nil, err
		}
		argv = append(argv, a)
	}
	if c.appends {
		argv = append(argv, v.Item)
	}
	return argv, nil
}

// AppendsItem reports whether the command has no placeholder at all, so
// that Expand appends the item as its last argument (quoted, in shell
// mode). A command with only {#} or {%} does not append the item.
func (c *Command) AppendsItem() bool { return c.appends }

// UsesItem reports whether the expanded command depends on the item: a
// placeholder other than {#} and {%}, or the appended item.
func (c *Command) UsesItem() bool { return c.sum.usesItem }

// MaxColumn returns the highest column number a placeholder names, such
// as 3 for {3} or {3/.}, or 0 if none does. An item with fewer columns
// fails to expand.
func (c *Command) MaxColumn() int { return c.sum.maxColumn }

// Program returns the command's first argument and true if it is plain
// text, without placeholders, so that the caller can look the program up
// before anything runs; otherwise it returns "", false. In shell mode it
// always returns "", false: what runs first is up to the shell.
func (c *Command) Program() (string, bool) { return c.prog, c.plain }
