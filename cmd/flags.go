package cmd

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

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
	if strings.TrimSpace(s) == "" {
		return errors.New("want rules such as 10/s or 10/s,500/min")
	}
	parts := strings.Split(s, ",")
	for _, p := range parts[:len(parts)-1] {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("the rule list %q has an empty rule; want rules separated by single commas, such as 5/s,500/min", s)
		}
	}
	if strings.HasSuffix(strings.TrimSpace(s), ",") {
		return fmt.Errorf("the rule list ends with a comma; give several rules without spaces, as in %s,500/min, or repeat the flag",
			strings.TrimSuffix(strings.TrimSpace(s), ","))
	}
	rs, err := throttle.ParseRules(s)
	if err != nil {
		return ruleHint(s, err)
	}
	for i := range rs {
		if v.cost {
			if rs[i].Cost {
				return fmt.Errorf("rule %q: --cost-rate takes N/PERIOD without the cost: prefix", s)
			}
			rs[i].Cost = true
		}
	}
	// A rule given twice is kept once: it limits nothing more, and a
	// shared quota compares rule sets without repetitions.
	*v.rules = uniqueRules(append(*v.rules, rs...))
	return nil
}

func (rulesValue) Type() string { return "N/PERIOD" }

// uniqueRules returns rules without exact duplicates: the first of equal
// rules stays, in its place; rules itself is not changed. A limiter keeps
// a rule given twice as it keeps it once, so pace normalises its rule set
// with uniqueRules before it is shown, used or compared with a shared
// quota's. A looser rule of the same window (10/s beside 5/s) is implied
// by the stricter one but kept: a rule set stays as its user wrote it,
// but for repetitions, which say nothing more.
func uniqueRules(rules []throttle.Rule) []throttle.Rule {
	var out []throttle.Rule
	for _, r := range rules {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// ruleHint turns a rule parsing error into one line for the user: what
// was wrong and, where the mistake is a common one, what was meant.
func ruleHint(spec string, err error) error {
	var re *throttle.RuleError
	if !errors.As(err, &re) {
		return err
	}
	msg := fmt.Sprintf("rule %q: want %s", re.Spec, re.Want)
	if guess := guessRule(re.Spec); guess != "" {
		msg += fmt.Sprintf("; did you mean %s?", guess)
	}
	return errors.New(msg)
}

var (
	// "5s", "10m": a count glued to a unit.
	gluedRule = regexp.MustCompile(`^\s*(\d+)\s*([a-zA-Z]+)\s*$`)
	// "5 per second", "5 per 3s", "5 a minute", "5/ second".
	wordyRule = regexp.MustCompile(`^\s*(\d+)\s*(?:per|a|an|every|/)\s*(\d*\s*[a-zA-Z]+)\s*$`)
	// "5 / s" or "5/ s": spaces that the shell kept.
	unitWords = map[string]string{
		"s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
		"m": "min", "min": "min", "mins": "min", "minute": "min", "minutes": "min",
		"h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
		"d": "day", "day": "day", "days": "day", "ms": "ms",
	}
)

// guessRule returns the rule a malformed spec most likely meant, or "".
func guessRule(spec string) string {
	if m := wordyRule.FindStringSubmatch(spec); m != nil {
		per := strings.ReplaceAll(strings.ToLower(m[2]), " ", "")
		if u, ok := unitWords[per]; ok {
			per = u
		}
		if _, err := throttle.ParseRule(m[1] + "/" + per); err == nil {
			return m[1] + "/" + per
		}
	}
	if m := gluedRule.FindStringSubmatch(spec); m != nil {
		if u, ok := unitWords[strings.ToLower(m[2])]; ok {
			return m[1] + "/" + u
		}
	}
	return ""
}

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

func (d durationValue) String() string {
	if d.v == nil {
		return "0s"
	}
	return d.v.String()
}

func (d durationValue) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d.v = v
	return nil
}

func (durationValue) Type() string { return "duration" }

// parseDuration parses a duration such as 5s, 500ms or 1m30s, with a
// user's error: a bare number gets a hint, never "missing unit".
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, nil
	}
	if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
		if s == "0" {
			return 0, nil
		}
		return 0, fmt.Errorf("want a duration with a unit, such as %ss or %sms", s, s)
	}
	if strings.Contains(s, "/") {
		return 0, errors.New("want a duration such as 5s, 500ms or 1m30s (this flag takes a duration, not a rule)")
	}
	return 0, errors.New("want a duration such as 5s, 500ms or 1m30s")
}

// sizeValue is a byte size flag: 1024, 64k, 10MB, 2GiB.
type sizeValue struct{ v *int64 }

func (z sizeValue) String() string {
	if z.v == nil {
		return "0"
	}
	return formatSize(*z.v)
}

func (z sizeValue) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*z.v = n
	return nil
}

func (sizeValue) Type() string { return "size" }

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}

// parseSize parses a byte count with an optional binary unit.
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	unit, ok := sizeUnits[strings.TrimSpace(t[i:])]
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if i == 0 || !ok || err != nil || n > (1<<62)/unit {
		return 0, errors.New("want a size such as 1048576, 512k, 64M or 4G")
	}
	return n * unit, nil
}

// formatSize writes n with the largest binary unit that divides it.
func formatSize(n int64) string {
	for _, u := range []struct {
		s string
		n int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"k", 1 << 10}} {
		if n >= u.n && n%u.n == 0 {
			return strconv.FormatInt(n/u.n, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10)
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
	d, err := parseDuration(v)
	if err != nil {
		return err
	}
	*s.v, *s.set = d, true
	return nil
}

func (setDurationValue) Type() string { return "duration" }
