package items

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
)

// CompileColSep compiles --colsep's regular expression, with an error
// that says what is expected: a separator that matches the empty string
// or every character would make empty columns, and a lone metacharacter
// (| . + ...) gets a hint at its literal. The error does not quote s: the
// caller says which flag it came from.
func CompileColSep(s string) (*regexp.Regexp, error) {
	if s == "" {
		return nil, errors.New("want a regular expression such as '\\t' or ','")
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
		return nil, fmt.Errorf("want a regular expression such as '\\t' or ',' (%s)%s", msg, hint)
	}
	if re.MatchString("") {
		return nil, fmt.Errorf("it matches the empty string, so it would split everywhere%s", hint)
	}
	if !strings.ContainsFunc("aZ0 ,\t|.", func(c rune) bool { return !re.MatchString(string(c)) }) {
		return nil, fmt.Errorf("it matches every character, so every column would be empty%s", hint)
	}
	return re, nil
}
