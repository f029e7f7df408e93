package spec

import (
	"slices"

	"github.com/pace-cli/pace/throttle"
)

// Union returns the rules of lists, in order, without exact duplicates:
// the first of equal rules stays, in its place; lists are not changed. A
// limiter keeps a rule given twice as it keeps it once, so pace normalises
// its rule set with Union before it is shown, used or compared with a
// shared quota's (-r cost:5/s and --cost-rate 5/s are one rule). A looser
// rule of the same window (10/s beside 5/s) is implied by the stricter one
// but kept: a rule set stays as its user wrote it, but for repetitions,
// which say nothing more.
func Union(lists ...[]throttle.Rule) []throttle.Rule {
	var out []throttle.Rule
	for _, rules := range lists {
		for _, r := range rules {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}
