package runner

import (
	"errors"
	"strconv"
	"strings"
)

// placeholder is one of the replacement strings a Template knows.
type placeholder int

const (
	phNone      placeholder = iota
	phItem                  // {}
	phNoExt                 // {.}
	phBase                  // {/}
	phDir                   // {//}
	phBaseNoExt             // {/.}
	phSeq                   // {#}
	phSlot                  // {%}
)

// placeholders maps each placeholder's text to its kind.
var placeholders = []struct {
	text string
	ph   placeholder
}{
	{"{}", phItem}, {"{.}", phNoExt}, {"{/}", phBase}, {"{//}", phDir},
	{"{/.}", phBaseNoExt}, {"{#}", phSeq}, {"{%}", phSlot},
}

// part is a literal string or a placeholder.
type part struct {
	lit string
	ph  placeholder
}

// Template is a command whose arguments may hold placeholders, with GNU
// parallel's meanings:
//
//	{}    the item
//	{.}   the item without its extension: dir/a.tar.gz -> dir/a.tar
//	{/}   the item's basename: dir/a.tar.gz -> a.tar.gz
//	{//}  the item's dirname: dir/a.tar.gz -> dir, a.txt -> .
//	{/.}  the basename without extension: dir/a.tar.gz -> a.tar
//	{#}   the job's sequence number, from 1
//	{%}   the job slot, 1..jobs
//
// Substitution is per argument and never passes through a shell: an item
// "x; rm -rf ~" becomes exactly that one argument. A template without any
// placeholder gets the item appended as its last argument. Other text in
// braces is left as it is.
//
// With Shell set (see NewTemplate), the arguments are joined with spaces
// into one shell script run by "sh -c", and every substituted value is
// quoted for the shell, so that the template may use pipes and
// redirections while items stay literal.
//
// A Template is immutable and safe for concurrent use.
type Template struct {
	args  [][]part
	has   bool // some argument holds a placeholder
	shell bool
}

// NewTemplate parses args, a command and its arguments. With shell set
// the command runs under "sh -c"; see Template.
func NewTemplate(args []string, shell bool) (*Template, error) {
	if len(args) == 0 {
		return nil, errors.New("runner: empty command template")
	}
	t := &Template{shell: shell}
	for _, a := range args {
		parts := parseArg(a)
		for _, p := range parts {
			if p.ph != phNone {
				t.has = true
			}
		}
		t.args = append(t.args, parts)
	}
	return t, nil
}

// parseArg splits one argument into literals and placeholders.
func parseArg(a string) []part {
	var parts []part
	lit := 0 // start of the pending literal
	for i := 0; i < len(a); {
		if a[i] != '{' {
			i++
			continue
		}
		ph, n := matchPlaceholder(a[i:])
		if ph == phNone {
			i++
			continue
		}
		if lit < i {
			parts = append(parts, part{lit: a[lit:i]})
		}
		parts = append(parts, part{ph: ph})
		i += n
		lit = i
	}
	if lit < len(a) || len(parts) == 0 {
		parts = append(parts, part{lit: a[lit:]})
	}
	return parts
}

// matchPlaceholder returns the placeholder s starts with and its length.
func matchPlaceholder(s string) (placeholder, int) {
	for _, p := range placeholders {
		if strings.HasPrefix(s, p.text) {
			return p.ph, len(p.text)
		}
	}
	return phNone, 0
}

// HasPlaceholder reports whether some argument holds a placeholder. If
// none does, the item is appended as the last argument.
func (t *Template) HasPlaceholder() bool { return t.has }

// Program returns the command's first argument as written, and whether it
// is a plain name or path, without placeholders.
func (t *Template) Program() (string, bool) {
	first := t.args[0]
	if len(first) != 1 || first[0].ph != phNone {
		return "", false
	}
	return first[0].lit, true
}

// Expand returns the argv for the item with sequence number seq in job
// slot slot.
func (t *Template) Expand(item string, seq int64, slot int) []string {
	if t.shell {
		return []string{Shell, "-c", t.script(item, seq, slot)}
	}
	argv := make([]string, 0, len(t.args)+1)
	var b strings.Builder
	for _, parts := range t.args {
		b.Reset()
		for _, p := range parts {
			b.WriteString(p.value(item, seq, slot))
		}
		argv = append(argv, b.String())
	}
	if !t.has {
		argv = append(argv, item)
	}
	return argv
}

// script joins the arguments into a shell script, quoting every
// substituted value.
func (t *Template) script(item string, seq int64, slot int) string {
	var b strings.Builder
	for i, parts := range t.args {
		if i > 0 {
			b.WriteByte(' ')
		}
		for _, p := range parts {
			if p.ph == phNone {
				b.WriteString(p.lit)
			} else {
				b.WriteString(Quote(p.value(item, seq, slot)))
			}
		}
	}
	if !t.has {
		b.WriteByte(' ')
		b.WriteString(Quote(item))
	}
	return b.String()
}

// Build returns the argv for job; it implements Builder.
func (t *Template) Build(job *Job) ([]string, error) {
	return t.Expand(job.Item, job.Seq, job.Slot), nil
}

// value returns what p stands for.
func (p part) value(item string, seq int64, slot int) string {
	switch p.ph {
	case phItem:
		return item
	case phNoExt:
		return trimExt(item)
	case phBase:
		return basename(item)
	case phDir:
		return dirname(item)
	case phBaseNoExt:
		return trimExt(basename(item))
	case phSeq:
		return strconv.FormatInt(seq, 10)
	case phSlot:
		return strconv.Itoa(slot)
	}
	return p.lit
}

// trimExt removes the last extension: a '.' followed by anything but '.'
// and '/' up to the end, as GNU parallel's s:\.[^/.]*$::.
func trimExt(s string) string {
	i := strings.LastIndexAny(s, "./")
	if i < 0 || s[i] != '.' {
		return s
	}
	return s[:i]
}

// basename removes everything up to the last '/', as GNU parallel's
// s:^.*/::.
func basename(s string) string {
	return s[strings.LastIndexByte(s, '/')+1:]
}

// dirname returns the directory part of s as Perl's File::Basename
// dirname does, which GNU parallel uses for {//}: "a/b" -> "a", "b" ->
// ".", "/a" -> "/", "a/b/" -> "a", "/" -> "/".
func dirname(s string) string {
	base, dir := fileparse(s)
	dir = stripTrailingSep(dir)
	if base == "" {
		_, dir = fileparse(dir)
		dir = stripTrailingSep(dir)
	}
	return dir
}

// fileparse splits s after its last '/'; the directory is "./" if there
// is none.
func fileparse(s string) (base, dir string) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return s, "./"
	}
	return s[i+1:], s[:i+1]
}

// stripTrailingSep removes trailing slashes but keeps the first character.
func stripTrailingSep(s string) string {
	if s == "" {
		return s
	}
	end := len(s)
	for end > 1 && s[end-1] == '/' {
		end--
	}
	return s[:end]
}
