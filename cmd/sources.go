package cmd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// source is one input source given after the command, as GNU parallel
// takes them: ::: and its arguments, or :::: and files of items.
type source struct {
	args  []string // the items of :::
	files []string // the files of ::::
}

// splitSources splits the arguments after pace's flags into the command
// and the input sources that follow ::: or ::::.
func splitSources(args []string) (cmdArgs []string, sources []source, err error) {
	i := slices.IndexFunc(args, func(a string) bool { return a == ":::" || a == "::::" })
	if i < 0 {
		return args, nil, nil
	}
	cmdArgs = args[:i]
	var cur *source
	for _, a := range args[i:] {
		switch a {
		case ":::":
			sources = append(sources, source{args: []string{}})
			cur = &sources[len(sources)-1]
		case "::::":
			sources = append(sources, source{files: []string{}})
			cur = &sources[len(sources)-1]
		default:
			if cur.args != nil {
				cur.args = append(cur.args, a)
			} else {
				cur.files = append(cur.files, a)
			}
		}
	}
	for _, s := range sources {
		if len(s.args) == 0 && len(s.files) == 0 {
			return nil, nil, flagErrorf("::: or :::: with nothing after it: give items (::: a b c) or files of items (:::: items.txt)")
		}
	}
	return cmdArgs, sources, nil
}

// openInput opens the run's items: its ::: and :::: sources, else -a FILE
// or stdin. With several sources the items are every combination of one
// value from each, in order, as GNU parallel makes them: {1} is the value
// from the first source, {2} from the second, and {} all of them joined by
// spaces.
func (opts *RunOptions) openInput(stdin io.Reader) (*input, error) {
	if len(opts.Sources) == 0 {
		return openInput(opts.Common.Input, stdin)
	}
	if opts.Common.Input != "-" && opts.Common.Input != "" {
		return nil, fmt.Errorf("-a %s and ::: or :::: both give items: use one", opts.Common.Input)
	}
	if len(opts.Sources) == 1 && len(opts.Sources[0].files) == 1 {
		return openInput(opts.Sources[0].files[0], stdin) // streamed, like -a
	}
	var values [][]string
	for _, s := range opts.Sources {
		vs := slices.Clone(s.args)
		for _, name := range s.files {
			more, err := readSourceFile(name, opts.Common.Null, stdin)
			if err != nil {
				return nil, err
			}
			vs = append(vs, more...)
		}
		values = append(values, vs)
	}
	n := int64(1)
	for _, vs := range values {
		n *= int64(len(vs))
	}
	return &input{r: &productReader{values: values, idx: make([]int, len(values))}, name: "the ::: items",
		close: func() error { return nil }, product: true, known: n}, nil
}

// readSourceFile reads the items of one :::: file ("-" is stdin).
func readSourceFile(name string, nul bool, stdin io.Reader) ([]string, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("open input: %w", err)
		}
		defer f.Close()
		r = f
	}
	var vs []string
	err := items.Scan(bufio.NewReader(r), items.ReadOptions{NUL: nul}, func(it runner.Item) error {
		if it.Err != nil {
			return fmt.Errorf("%s: %w", name, it.Err)
		}
		vs = append(vs, it.Text)
		return nil
	})
	return vs, err
}

// Columns of the items productReader makes: a unit separator between
// values, NUL after each item. Neither can be in an argument.
const (
	productColSep  = "\x1f"
	productItemSep = 0
)

// productColSepRe splits the items productReader makes into their values.
var productColSepRe = regexp.MustCompile(productColSep)

// productReader reads every combination of one value from each source,
// the last source varying fastest, as NUL-separated items whose values
// are separated by productColSep.
type productReader struct {
	values [][]string
	idx    []int
	buf    bytes.Buffer
	done   bool
}

func (p *productReader) Read(b []byte) (int, error) {
	for p.buf.Len() < len(b) && !p.done {
		if slices.ContainsFunc(p.values, func(v []string) bool { return len(v) == 0 }) {
			p.done = true
			break
		}
		for i, j := range p.idx {
			if i > 0 {
				p.buf.WriteString(productColSep)
			}
			p.buf.WriteString(p.values[i][j])
		}
		p.buf.WriteByte(productItemSep)
		// Next combination: the last source varies fastest.
		k := len(p.idx) - 1
		for k >= 0 {
			p.idx[k]++
			if p.idx[k] < len(p.values[k]) {
				break
			}
			p.idx[k] = 0
			k--
		}
		p.done = k < 0
	}
	if p.buf.Len() == 0 {
		return 0, io.EOF
	}
	return p.buf.Read(b)
}

// compileColSep compiles --colsep's regular expression, with an error
// that says what is expected: a separator that matches the empty string
// or every character would make empty columns, and a lone metacharacter
// (| . + ...) gets a hint at its literal.
func compileColSep(s string) (*regexp.Regexp, error) {
	if s == "" {
		return nil, flagErrorf("invalid argument \"\" for \"--colsep\": want a regular expression such as '\\t' or ','")
	}
	hint := ""
	if len(s) == 1 && regexp.QuoteMeta(s) != s {
		hint = fmt.Sprintf("; for a literal %s give --colsep '\\%s'", s, s)
	}
	re, err := regexp.Compile(s)
	if err != nil {
		var se *syntax.Error
		msg := err.Error()
		if errors.As(err, &se) {
			msg = se.Code.String()
		}
		return nil, flagErrorf("invalid argument %q for \"--colsep\": want a regular expression such as '\\t' or ',' (%s)%s", s, msg, hint)
	}
	if re.MatchString("") {
		return nil, flagErrorf("invalid argument %q for \"--colsep\": it matches the empty string, so it would split everywhere%s", s, hint)
	}
	if !strings.ContainsFunc("aZ0 ,\t|.", func(c rune) bool { return !re.MatchString(string(c)) }) {
		return nil, flagErrorf("invalid argument %q for \"--colsep\": it matches every character, so every column would be empty%s", s, hint)
	}
	return re, nil
}

// trapFlags are pace's own flags that, written after the command, are
// most likely meant for pace: an argument after the command that is one
// of them (or -r followed by a rule) makes pace stop with exit 2, unless
// -- came before the command. Flags that commands commonly have too
// (--timeout, --verbose, -j N, ...) are left alone.
var trapFlags = []string{"--rate", "--jobs", "--joblog", "--resume", "--resume-failed", "--redis",
	"--global-jobs", "--margin", "--retries", "--grace", "--keep-order", "--dry-run", "--progress",
	"--summary", "--summary-file", "--shell", "--colsep", "--halt", "--cost-rate", "--cost"}

// paceFlagAfterCommand returns a usage error when an argument after the
// command looks like one of pace's own flags.
func paceFlagAfterCommand(args []string) error {
	for i, a := range args {
		if i == 0 {
			continue // the program
		}
		name, _, _ := strings.Cut(a, "=")
		flag := ""
		switch {
		case slices.Contains(trapFlags, name):
			flag = a
		case a == "-r" && i+1 < len(args) && isRule(args[i+1]):
			flag = a + " " + args[i+1]
		case strings.HasPrefix(a, "-r") && isRule(a[2:]):
			flag = a
		}
		if flag != "" {
			return flagErrorf("%q after the command goes to the command, not to pace; "+
				"put pace's flags before the command, or write -- before the command if %s is meant for it", flag, a)
		}
	}
	return nil
}

// isRule reports whether s reads as a rule list.
func isRule(s string) bool {
	rs, err := throttle.ParseRules(s)
	return err == nil && len(rs) > 0
}
