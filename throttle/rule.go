package throttle

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidRule is wrapped by every error that ParseRule and ParseRules
// return, so callers can tell a bad rule spec from other failures.
var ErrInvalidRule = errors.New("invalid rule")

// MaxLimit is the largest N a rule may have. Larger limits are almost
// certainly typos, and they would overflow the counters' arithmetic.
const MaxLimit = 1 << 40

// maxWindow bounds a rule's window so that window arithmetic on
// nanosecond offsets can never overflow int64 (about 292 years).
const maxWindow = 100 * 365 * 24 * time.Hour

// A Rule allows at most N calls in any half-open window (t-Window, t].
// A call at exactly t+Window may therefore follow the call at t.
type Rule struct {
	N      int
	Window time.Duration
}

// String formats r as a spec that ParseRule reads back to r, such as
// "10/s", "500/m", "12/3s" or "100/1m30s".
func (r Rule) String() string {
	return strconv.Itoa(r.N) + "/" + formatWindow(r.Window)
}

// Valid reports whether r can be used by a limiter: 1 <= N <= MaxLimit and
// a positive window no longer than a century.
func (r Rule) Valid() bool {
	return r.N >= 1 && r.N <= MaxLimit && r.Window > 0 && r.Window <= maxWindow
}

// FormatRules formats rules as a comma list that ParseRules reads back.
func FormatRules(rules []Rule) string {
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// ParseRules parses a comma-separated list of rules such as
// "10/s,500/m,10000/d". Empty elements are errors; the empty string is the
// empty list.
func ParseRules(spec string) ([]Rule, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	var rules []Rule
	for part := range strings.SplitSeq(spec, ",") {
		r, err := ParseRule(part)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// ParseRule parses one rule "N/PERIOD". PERIOD is a unit (ms, s, sec, m,
// min, h, hour, d, day, with optional plural s) meaning one of it, or a
// duration made of number-unit pairs such as 3s, 500ms, 1m30s or 2d.
func ParseRule(spec string) (Rule, error) {
	s := strings.TrimSpace(spec)
	num, per, ok := strings.Cut(s, "/")
	if !ok {
		return Rule{}, ruleError(spec, "a limit and a period separated by '/'")
	}
	num, per = strings.TrimSpace(num), strings.TrimSpace(per)
	if num == "" {
		return Rule{}, ruleError(spec, "a limit before '/', such as 10/s")
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return Rule{}, ruleError(spec, fmt.Sprintf("a limit of at most %d", int64(MaxLimit)))
		}
		return Rule{}, ruleError(spec, "a whole number of calls before '/', such as 10/s")
	}
	if n < 1 {
		return Rule{}, ruleError(spec, "a limit of at least 1 call")
	}
	if n > MaxLimit {
		return Rule{}, ruleError(spec, fmt.Sprintf("a limit of at most %d", int64(MaxLimit)))
	}
	if per == "" {
		return Rule{}, ruleError(spec, "a period after '/', such as s, min, 3s or 1m30s")
	}
	w, err := parseWindow(per)
	if err != nil {
		return Rule{}, ruleError(spec, err.Error())
	}
	return Rule{N: int(n), Window: w}, nil
}

func ruleError(spec, expected string) error {
	return fmt.Errorf("throttle: rule %q: want %s: %w", spec, expected, ErrInvalidRule)
}

// units maps every accepted unit name to its duration.
var units = map[string]time.Duration{
	"ns": time.Nanosecond,
	"us": time.Microsecond, "µs": time.Microsecond,
	"ms": time.Millisecond,
	"s":  time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

const periodHelp = "a period such as s, min, h, day, 3s, 500ms or 1m30s"

// parseWindow parses a bare unit ("min") or a sequence of number-unit
// pairs ("1m30s", "2d").
func parseWindow(s string) (time.Duration, error) {
	if u, ok := units[s]; ok {
		return u, nil
	}
	var total time.Duration
	rest := s
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 {
			return 0, errors.New(periodHelp)
		}
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil {
			return 0, errors.New("a period shorter than 100 years")
		}
		rest = rest[i:]
		j := 0
		for j < len(rest) && (rest[j] < '0' || rest[j] > '9') {
			j++
		}
		u, ok := units[rest[:j]]
		if !ok {
			return 0, errors.New(periodHelp)
		}
		rest = rest[j:]
		if n > int64(maxWindow/u) {
			return 0, errors.New("a period shorter than 100 years")
		}
		total += time.Duration(n) * u
		if total > maxWindow {
			return 0, errors.New("a period shorter than 100 years")
		}
	}
	if total <= 0 {
		return 0, errors.New("a period longer than zero")
	}
	return total, nil
}

// formatUnits lists the units formatWindow writes, largest first.
var formatUnits = []struct {
	name string
	d    time.Duration
}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second},
	{"ms", time.Millisecond}, {"us", time.Microsecond}, {"ns", time.Nanosecond}}

// formatWindow writes w in the shortest form parseWindow reads back: a
// bare unit when w is exactly one of them, else number-unit pairs.
func formatWindow(w time.Duration) string {
	if w <= 0 {
		return strconv.FormatInt(int64(w), 10) + "ns"
	}
	for _, u := range formatUnits[:5] {
		if w == u.d {
			return u.name
		}
	}
	var b strings.Builder
	rest := w
	for _, u := range formatUnits {
		if rest >= u.d {
			b.WriteString(strconv.FormatInt(int64(rest/u.d), 10))
			b.WriteString(u.name)
			rest %= u.d
		}
	}
	return b.String()
}

// validate checks a rule set given to a limiter constructor.
func validate(rules []Rule) error {
	for _, r := range rules {
		if !r.Valid() {
			return fmt.Errorf("throttle: rule %d/%v: want 1 <= N <= %d and 0 < window <= 100 years: %w",
				r.N, r.Window, int64(MaxLimit), ErrInvalidRule)
		}
	}
	return nil
}
