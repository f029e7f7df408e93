package cmd

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/throttle"
)

// openInput opens the run's items: its ::: and :::: sources, else -a FILE
// or stdin. With several sources the items are every combination of one
// value from each, in order, as GNU parallel makes them: {1} is the value
// from the first source, {2} from the second, and {} all of them joined by
// spaces.
func (opts *RunOptions) openInput(stdin io.Reader) (*items.Input, error) {
	if len(opts.Sources) == 0 {
		return items.Open(opts.Common.Input, stdin)
	}
	if opts.Common.Input != "-" && opts.Common.Input != "" {
		return nil, fmt.Errorf("-a %s and ::: or :::: both give items: use one", opts.Common.Input)
	}
	if len(opts.Sources) == 1 && len(opts.Sources[0].Files) == 1 {
		return items.Open(opts.Sources[0].Files[0], stdin) // streamed, like -a
	}
	var values [][]string
	for _, s := range opts.Sources {
		vs := slices.Clone(s.Args)
		for _, name := range s.Files {
			more, err := items.ReadSourceFile(name, opts.Common.Null, stdin)
			if err != nil {
				return nil, err
			}
			vs = append(vs, more...)
		}
		values = append(values, vs)
	}
	return items.Product(values), nil
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
