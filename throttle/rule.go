package throttle

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pace-cli/pace/throttle/internal/link"
)

// ErrBadCost is wrapped by the error of an admission whose cost is not a
// positive integer that every cost rule can hold: such a call could never
// be admitted.
var ErrBadCost = errors.New("cost cannot be admitted")

// MaxLimit is the largest N a rule may have. Larger limits are almost
// certainly typos, and they would overflow the counters' arithmetic.
const MaxLimit = 1 << 40

// maxWindow is the longest window a rule may have (a century), and the
// widest margin a backend applies (link.MaxWindow).
const maxWindow = link.MaxWindow

// periodMax is what a period past maxWindow is told it must be.
const periodMax = "a period of at most 100 years (36500d)"

// A Rule allows at most N calls in any half-open window (t-Window, t].
// A call at exactly t+Window may therefore follow the call at t.
//
// A cost rule (Cost set) limits the sum of the calls' costs instead of
// their number: no window (t-Window, t] holds calls whose costs add up to
// more than N, as with an API's tokens per minute. A call's cost is given
// at admission (see Backend.Admit); a count rule counts every call as 1
// whatever its cost.
type Rule struct {
	N      int
	Window time.Duration
	Cost   bool
}

// costPrefix marks a cost rule in its spec: "cost:100/s".
const costPrefix = "cost:"

// String formats r as a spec that ParseRule reads back to r, such as
// "10/s", "500/m", "12/3s", "100/1m30s" or, for a cost rule, "cost:100/s".
func (r Rule) String() string {
	s := strconv.Itoa(r.N) + "/" + formatWindow(r.Window)
	if r.Cost {
		return costPrefix + s
	}
	return s
}

// weight returns what a call of the given cost counts in r: its cost for
// a cost rule, 1 for a count rule.
func (r Rule) weight(cost int) int {
	if r.Cost {
		return cost
	}
	return 1
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
		if strings.TrimSpace(part) == "" {
			return nil, ruleError(spec, "a rule between every two commas, such as 10/s,500/min")
		}
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
// duration made of number-unit pairs such as 3s, 500ms, 1m30s or 2d. The
// prefix "cost:" makes a cost rule: "cost:100/s".
func ParseRule(spec string) (Rule, error) {
	s := strings.TrimSpace(spec)
	isCost := false
	if rest, ok := strings.CutPrefix(s, costPrefix); ok {
		s, isCost = strings.TrimSpace(rest), true
	}
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
	return Rule{N: int(n), Window: w, Cost: isCost}, nil
}

// A RuleError reports a rule that cannot be used: a spec that ParseRule
// cannot read, or a rule given to a limiter that is not Valid. It holds
// the spec as given and what was expected instead. Every error of
// ParseRule, ParseRules and New about a rule is one; check for it with
// errors.As.
type RuleError struct {
	Spec string // the spec as given
	Want string // what was expected, such as "a period after '/', such as s, min, 3s or 1m30s"
}

// Error returns "throttle: rule SPEC: want WANT".
func (e *RuleError) Error() string {
	return fmt.Sprintf("throttle: rule %q: want %s", e.Spec, e.Want)
}

func ruleError(spec, expected string) error {
	return &RuleError{Spec: spec, Want: expected}
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
			return 0, errors.New(periodMax)
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
			return 0, errors.New(periodMax)
		}
		total += time.Duration(n) * u
		if total > maxWindow {
			return 0, errors.New(periodMax)
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

// validate checks a rule set given to a limiter constructor: every rule
// Valid. The shared backends call it too (through package gate) so that
// they all refuse the same rule sets.
func validate(rules []Rule) error {
	for _, r := range rules {
		if !r.Valid() {
			return &RuleError{Spec: fmt.Sprintf("%d/%v", r.N, r.Window),
				Want: fmt.Sprintf("1 <= N <= %d and 0 < window <= 100 years", int64(MaxLimit))}
		}
	}
	return nil
}

// MaxCost returns the largest cost one call may have under rules: the
// smallest N among the cost rules, or 0 when no rule limits costs (then
// any cost fits). A call costing more could never be admitted.
func MaxCost(rules []Rule) int {
	m := 0
	for _, r := range rules {
		if r.Cost && (m == 0 || r.N < m) {
			m = r.N
		}
	}
	return m
}

// checkCost returns why a call costing cost can never be admitted under
// rules, or nil.
func checkCost(rules []Rule, cost int) error {
	if cost < 1 {
		return fmt.Errorf("throttle: cost %d: %w", cost, ErrBadCost)
	}
	for _, r := range rules {
		if r.Cost && cost > r.N {
			return fmt.Errorf("throttle: cost %d exceeds rule %s: %w", cost, r, ErrBadCost)
		}
	}
	return nil
}
