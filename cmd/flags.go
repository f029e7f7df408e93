package cmd

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pace-cli/pace/internal/halt"
	"github.com/pace-cli/pace/internal/spec"
	"github.com/pace-cli/pace/throttle"
)

// This file holds the pflag.Value types of pace's flags. Their errors are
// written for users: pflag prints them as `invalid argument "X" for "-f"
// flag: ERROR`, so ERROR says what is expected and, where it can guess,
// what was meant; no strconv or time internals.

// rulesValue is a pflag.Value collecting rate rules: the flag may be
// repeated and each value may be a comma list, so -r 10/s -r 500/min is
// -r 10/s,500/min. With cost set the rules are cost rules (--cost-rate).
type rulesValue struct {
	rules *[]throttle.Rule
	cost  bool
}

func (v rulesValue) String() string {
	if v.rules == nil {
		return ""
	}
	return throttle.FormatRules(*v.rules)
}

func (v rulesValue) Set(s string) error {
	rs, err := spec.Rules(s, v.cost)
	if err != nil {
		return err
	}
	// A rule given twice is kept once: it limits nothing more, and a
	// shared quota compares rule sets without repetitions.
	*v.rules = spec.Union(*v.rules, rs)
	return nil
}

func (rulesValue) Type() string { return "N/PERIOD" }

// enumValue is a pflag.Value that accepts one of a few words.
type enumValue struct {
	v       *string
	allowed []string
}

func (e enumValue) String() string {
	if e.v == nil {
		return ""
	}
	return *e.v
}

func (e enumValue) Set(s string) error {
	if !slices.Contains(e.allowed, s) {
		return fmt.Errorf("want one of %s", strings.Join(e.allowed, ", "))
	}
	*e.v = s
	return nil
}

func (e enumValue) Type() string { return strings.Join(e.allowed, "|") }

// intValue is an int flag whose errors say what is expected.
type intValue struct{ v *int }

func (i intValue) String() string {
	if i.v == nil {
		return "0"
	}
	return strconv.Itoa(*i.v)
}

func (i intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return errors.New("want a smaller whole number")
		}
		return errors.New("want a whole number, such as 4")
	}
	*i.v = n
	return nil
}

func (intValue) Type() string { return "int" }

// durationValue is a duration flag whose errors say what is expected.
type durationValue struct{ v *time.Duration }

// String is "0" for no time, which pflag takes as no default to show:
// the usages say what 0 means (no timeout, wait, ...).
func (d durationValue) String() string {
	if d.v == nil || *d.v == 0 {
		return "0"
	}
	return d.v.String()
}

func (d durationValue) Set(s string) error {
	v, err := spec.Duration(s)
	if err != nil {
		return err
	}
	*d.v = v
	return nil
}

func (durationValue) Type() string { return "duration" }

// sizeValue is a byte size flag: 1024, 64k, 10MB, 2GiB.
type sizeValue struct{ v *int64 }

func (z sizeValue) String() string {
	if z.v == nil {
		return "0"
	}
	return spec.FormatSize(*z.v)
}

func (z sizeValue) Set(s string) error {
	n, err := spec.Size(s)
	if err != nil {
		return err
	}
	*z.v = n
	return nil
}

func (sizeValue) Type() string { return "size" }

// pathValue is a flag that names a file or directory. An explicit empty
// value is refused, with want saying what is expected: `--joblog "$LOG"`
// with LOG unset must not run as if --joblog had been left out (no job
// log, no earlier calls counted).
type pathValue struct {
	v    *string
	want string // such as "want a file name; leave --joblog out for none"
}

func (p pathValue) String() string {
	if p.v == nil {
		return ""
	}
	return *p.v
}

func (p pathValue) Set(s string) error {
	if s == "" {
		return errors.New(p.want)
	}
	*p.v = s
	return nil
}

func (pathValue) Type() string { return "string" }

// oncePathValue is a pathValue given at most once: a second value is
// refused with msg, not silently taken in place of the first.
type oncePathValue struct {
	pathValue
	msg  string
	seen *bool
}

func (p oncePathValue) Set(s string) error {
	if *p.seen && s != "" {
		return fmt.Errorf("%q came first: %s", *p.v, p.msg)
	}
	*p.seen = true
	return p.pathValue.Set(s)
}

// setStringValue is a string flag that remembers it was given, so that an
// empty value can be told from no flag.
type setStringValue struct {
	v   *string
	set *bool
}

func (s setStringValue) String() string {
	if s.v == nil {
		return ""
	}
	return *s.v
}

func (s setStringValue) Set(v string) error { *s.v, *s.set = v, true; return nil }

func (setStringValue) Type() string { return "string" }

// setDurationValue is a duration flag that remembers it was given, so that
// an explicit 0 can be told from no flag.
type setDurationValue struct {
	v   *time.Duration
	set *bool
}

func (s setDurationValue) String() string {
	if s.v == nil {
		return ""
	}
	return s.v.String()
}

func (s setDurationValue) Set(v string) error {
	d, err := spec.Duration(v)
	if err != nil {
		return err
	}
	*s.v, *s.set = d, true
	return nil
}

func (setDurationValue) Type() string { return "duration" }

// haltValue is the pflag.Value of --halt.
type haltValue struct{ h **halt.Policy }

func (v haltValue) String() string {
	if v.h == nil {
		return "never"
	}
	return (*v.h).String()
}

func (v haltValue) Set(s string) error {
	h, err := halt.Parse(s)
	if err != nil {
		return err
	}
	*v.h = h
	return nil
}

func (haltValue) Type() string { return "when,cond=N" }
