package items

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/pace-cli/pace/runner"
)

// ErrEmptySource is SplitSources' error for a ::: or :::: with nothing
// after it.
var ErrEmptySource = errors.New("::: or :::: with nothing after it: give items (::: a b c) or files of items (:::: items.txt)")

// Source is one input source given after the command, as GNU parallel
// takes them: ::: and its arguments, or :::: and files of items.
type Source struct {
	Args  []string // the items of :::
	Files []string // the files of ::::
}

// stdinNames are the names of stdin as a :::: file.
var stdinNames = []string{"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"}

// SplitSources splits the arguments after pace's flags into the command
// and the input sources that follow ::: or ::::. A source with nothing
// after it is ErrEmptySource; stdin named twice is an error too.
func SplitSources(args []string) (cmdArgs []string, sources []Source, err error) {
	i := slices.IndexFunc(args, func(a string) bool { return a == ":::" || a == "::::" })
	if i < 0 {
		return args, nil, nil
	}
	cmdArgs = args[:i]
	var cur *Source
	for _, a := range args[i:] {
		switch a {
		case ":::":
			sources = append(sources, Source{Args: []string{}})
			cur = &sources[len(sources)-1]
		case "::::":
			sources = append(sources, Source{Files: []string{}})
			cur = &sources[len(sources)-1]
		default:
			if cur.Args != nil {
				cur.Args = append(cur.Args, a)
			} else {
				cur.Files = append(cur.Files, a)
			}
		}
	}
	stdin := ""
	for _, s := range sources {
		if len(s.Args) == 0 && len(s.Files) == 0 {
			return nil, nil, ErrEmptySource
		}
		for _, f := range s.Files {
			if !slices.Contains(stdinNames, f) {
				continue
			}
			if stdin != "" {
				return nil, nil, fmt.Errorf(":::: %s and :::: %s both read stdin, which can be read once: the second would get no items, and the run none; save stdin to a file and name it once", stdin, f)
			}
			stdin = f
		}
	}
	return cmdArgs, sources, nil
}

// ReadSourceFile reads the items of one :::: file ("-" is stdin).
func ReadSourceFile(name string, nul bool, stdin io.Reader) ([]string, error) {
	r := stdin
	if name == "-" {
		if err := checkStdin(stdin); err != nil {
			return nil, err
		}
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("open input: %w", err)
		}
		defer f.Close()
		r = f
	}
	var vs []string
	err := Scan(bufio.NewReader(r), ReadOptions{NUL: nul}, func(it runner.Item) error {
		if it.Err != nil {
			return fmt.Errorf("%s: %w", name, it.Err)
		}
		vs = append(vs, it.Text)
		return nil
	})
	return vs, err
}

// The items productReader makes: a unit separator between values, NUL
// after each item. A value holds no NUL (no argument or item can), but it
// may hold any other byte, the separator too: productEsc escapes the
// separator and itself within a value (ReadOptions.Sources undoes it).
const (
	productColSep  = '\x1f'
	productItemSep = 0
	productEsc     = '\x1e'
)

// productEscaper escapes a value: the escape byte doubled, the separator
// as the escape byte and 'f'.
var productEscaper = strings.NewReplacer(string(rune(productEsc)), "\x1e\x1e", string(rune(productColSep)), "\x1ef")

// productCols splits an item productReader made into its values, as
// they were given.
func productCols(text string) []string {
	cols := strings.Split(text, string(rune(productColSep)))
	for i, c := range cols {
		if strings.IndexByte(c, productEsc) < 0 {
			continue
		}
		b := make([]byte, 0, len(c))
		for j := 0; j < len(c); j++ {
			if c[j] == productEsc && j+1 < len(c) {
				j++
				if c[j] == 'f' {
					b = append(b, productColSep)
					continue
				}
			}
			b = append(b, c[j])
		}
		cols[i] = string(b)
	}
	return cols
}

// Product returns the input of every combination of one value from each
// of values, in order, as GNU parallel makes them from its sources:
// NUL-separated items to read with ReadOptions.Sources, the last source
// varying fastest. It knows how many there are (Count).
func Product(values [][]string) *Input {
	n := int64(1)
	for _, vs := range values {
		n *= int64(len(vs))
	}
	return &Input{R: &productReader{values: values, idx: make([]int, len(values))}, Name: "the ::: items", Sources: true, known: n}
}

// productReader reads every combination of one value from each source,
// the last source varying fastest, as NUL-separated items whose values,
// escaped, are separated by productColSep.
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
				p.buf.WriteByte(productColSep)
			}
			productEscaper.WriteString(&p.buf, p.values[i][j])
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

// OpenSources opens a run's items: its ::: and :::: sources, else input
// (-a FILE, or "-" or "" for stdin). With several sources the items are
// every combination of one value from each, in order, as GNU parallel
// makes them: {1} is the value from the first source, {2} from the
// second, and {} all of them joined by spaces. A single :::: file is
// streamed, as -a is; null says its files' items end with NULs.
func OpenSources(sources []Source, input string, null bool, stdin io.Reader) (*Input, error) {
	if len(sources) == 0 {
		return Open(input, stdin)
	}
	if input != "-" && input != "" {
		return nil, fmt.Errorf("-a %s and ::: or :::: both give items: use one", input)
	}
	if len(sources) == 1 && len(sources[0].Files) == 1 {
		return Open(sources[0].Files[0], stdin) // streamed, like -a
	}
	var values [][]string
	for _, s := range sources {
		vs := slices.Clone(s.Args)
		for _, name := range s.Files {
			more, err := ReadSourceFile(name, null, stdin)
			if err != nil {
				return nil, err
			}
			vs = append(vs, more...)
		}
		values = append(values, vs)
	}
	return Product(values), nil
}
