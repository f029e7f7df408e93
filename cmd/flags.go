package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pace-cli/pace/throttle"
)

// rulesValue is a pflag.Value collecting rate rules: the flag may be
// repeated and each value may be a comma list, so -r 10/s -r 500/min is
// -r 10/s,500/min.
type rulesValue struct {
	rules *[]throttle.Rule
}

func (v rulesValue) String() string {
	if v.rules == nil {
		return ""
	}
	return throttle.FormatRules(*v.rules)
}

func (v rulesValue) Set(s string) error {
	rs, err := throttle.ParseRules(s)
	if err != nil {
		return err
	}
	if len(rs) == 0 {
		return fmt.Errorf("empty rule list")
	}
	*v.rules = append(*v.rules, rs...)
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
