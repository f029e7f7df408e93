// Package spec reads what users write on pace's command line into values:
// rule lists, durations, byte sizes, GNU parallel's --delay. Its errors
// are written for users (pflag prints them as "invalid argument "X" for
// "-f" flag: ERROR"): they say what is expected and, where they can
// guess, what was meant; no strconv or time internals.
package spec

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// Rules reads a comma-separated list of rules such as 10/s,500/min;
// with cost, they are cost rules (--cost-rate: N/PERIOD without the cost:
// prefix). Its errors say what is expected and, for the common mistakes
// (5s, 5 per second), what was meant.
func Rules(s string, cost bool) ([]throttle.Rule, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("want rules such as 10/s or 10/s,500/min")
	}
	parts := strings.Split(s, ",")
	for _, p := range parts[:len(parts)-1] {
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("the rule list %q has an empty rule; want rules separated by single commas, such as 5/s,500/min", s)
		}
	}
	if strings.HasSuffix(strings.TrimSpace(s), ",") {
		return nil, fmt.Errorf("the rule list ends with a comma; give several rules without spaces, as in %s,500/min, or repeat the flag",
			strings.TrimSuffix(strings.TrimSpace(s), ","))
	}
	rs, err := throttle.ParseRules(s)
	if err != nil {
		return nil, ruleHint(err)
	}
	for i := range rs {
		if cost {
			if rs[i].Cost {
				return nil, fmt.Errorf("rule %q: --cost-rate takes N/PERIOD without the cost: prefix", s)
			}
			rs[i].Cost = true
		}
	}
	return rs, nil
}

// ruleHint turns a rule parsing error into one line for the user: what
// was wrong and, where the mistake is a common one, what was meant.
func ruleHint(err error) error {
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

// The patterns of guessRule, compiled when a rule is wrong, not at the
// start of every pace process.
var (
	// "5s", "10m": a count glued to a unit.
	gluedRule = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*(\d+)\s*([a-zA-Z]+)\s*$`) })
	// "5 per second", "5 per 3s", "5 a minute", "5/ second".
	wordyRule = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\s*(\d+)\s*(?:per|a|an|every|/)\s*(\d*\s*[a-zA-Z]+)\s*$`)
	})
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
	if m := wordyRule().FindStringSubmatch(spec); m != nil {
		per := strings.ReplaceAll(strings.ToLower(m[2]), " ", "")
		if u, ok := unitWords[per]; ok {
			per = u
		}
		if _, err := throttle.ParseRule(m[1] + "/" + per); err == nil {
			return m[1] + "/" + per
		}
	}
	if m := gluedRule().FindStringSubmatch(spec); m != nil {
		if u, ok := unitWords[strings.ToLower(m[2])]; ok {
			return m[1] + "/" + u
		}
	}
	return ""
}

// Duration parses a duration such as 5s, 500ms or 1m30s, with a
// user's error: a bare number gets a hint, never "missing unit".
func Duration(s string) (time.Duration, error) {
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
	if durationSyntax.MatchString(s) {
		return 0, fmt.Errorf("want a duration of at most %v (about 292 years)", time.Duration(math.MaxInt64).Truncate(time.Second))
	}
	return 0, errors.New("want a duration such as 5s, 500ms or 1m30s")
}

// durationSyntax matches what time.ParseDuration reads: one it refuses
// all the same is too long.
var durationSyntax = regexp.MustCompile(`^[-+]?([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$`)

// sizeUnits are the units Size reads, lower case.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}

// Size parses a byte count with an optional binary unit.
func Size(s string) (int64, error) {
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

// FormatSize writes n with the largest binary unit that divides it.
func FormatSize(n int64) string {
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

// DelayHint returns the rule that does what GNU parallel's --delay with
// the value in args does (one start per delay), or "" when args hold no
// delay pace can read. A delay that divides a second also gets the rule
// per second, which allows the same starts in bursts.
func DelayHint(args []string) string {
	value := ""
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--delay="); ok {
			value = v
			break
		}
		if a == "--delay" && i+1 < len(args) {
			value = args[i+1]
			break
		}
	}
	d, ok := ParallelDelay(value)
	if !ok {
		return ""
	}
	one := throttle.Rule{N: 1, Window: d}
	hint := fmt.Sprintf("--delay %s is GNU parallel's; pace's is -r %s", value, one)
	if d < time.Second && time.Second%d == 0 {
		hint = fmt.Sprintf("--delay %s is GNU parallel's; pace's is -r %d/s (or -r %s to space every start by %s)",
			value, time.Second/d, one, d)
	}
	return hint
}

// ParallelDelay reads a delay as GNU parallel does: seconds, or a
// number with a unit s, m, h or d. It reports false for anything else,
// and for delays no rule can hold.
func ParallelDelay(s string) (time.Duration, bool) {
	unit := time.Second
	if n := len(s); n > 0 {
		if u, ok := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[s[n-1]]; ok {
			s, unit = s[:n-1], u
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f <= 0 || f > 365*24 {
		return 0, false
	}
	d := time.Duration(math.Round(f * float64(unit)))
	if !(throttle.Rule{N: 1, Window: d}).Valid() {
		return 0, false
	}
	return d, true
}
