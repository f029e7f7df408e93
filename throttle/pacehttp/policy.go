package pacehttp

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// maxPolicyRules bounds the rules one response may publish.
const maxPolicyRules = 8

// parsePolicy reads the rate rules a server publishes in a response's
// headers, and reports which header said so:
//
//   - rateLimit-Policy: "name";q=100;w=60 (IETF draft 08 and later; q is
//     the quota, w the window in seconds), several comma-separated;
//   - RateLimit-Policy: 100;w=60 and rateLimit-Limit: 100, 100;w=60
//     (drafts 03 to 07: the first number is the quota, w= the window);
//   - X-rateLimit-Limit: 100;w=60 or 100;window=60, as some APIs extend
//     the X- headers. A bare X-rateLimit-Limit: 100 says no window and
//     publishes nothing.
//
// It returns the rules (sorted by window, without duplicates), or none.
func parsePolicy(h http.Header) ([]throttle.Rule, string) {
	for _, name := range policyHeaders {
		if v := h[name.key]; len(v) > 0 {
			if rules := parsePolicyField(strings.Join(v, ",")); len(rules) > 0 {
				return rules, name.name
			}
		}
	}
	return nil, ""
}

// policyHeaders are the headers parsePolicy reads, in order: their names
// as shown, and their keys in an http.Header, canonical (as
// http.CanonicalHeaderKey makes them), so that a lookup need not
// canonicalise the name each time (Header.Get does, allocating for these).
var policyHeaders = []struct{ name, key string }{
	{"RateLimit-Policy", "Ratelimit-Policy"},
	{"RateLimit-Limit", "Ratelimit-Limit"},
	{"X-RateLimit-Limit", "X-Ratelimit-Limit"},
}

// parsePolicyField reads the quota;w=window members of a policy field.
func parsePolicyField(v string) []throttle.Rule {
	var rules []throttle.Rule
	for member := range strings.SplitSeq(v, ",") {
		head, params, _ := strings.Cut(member, ";")
		var n int64 = -1
		var w time.Duration
		if c, ok := parseCount(head); ok {
			n = c // drafts 03-07: the quota comes first
		}
		for p := range strings.SplitSeq(params, ";") {
			k, val, _ := strings.Cut(p, "=")
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "q":
				if c, ok := parseCount(val); ok {
					n = c
				}
			case "w", "window":
				if d, ok := parseDelta(val); ok {
					w = d
				}
			}
		}
		if n < 1 || w <= 0 || n > throttle.MaxLimit {
			continue
		}
		r := throttle.Rule{N: int(n), Window: w}
		if r.Valid() && !slices.Contains(rules, r) && len(rules) < maxPolicyRules {
			rules = append(rules, r)
		}
	}
	slices.SortFunc(rules, func(a, b throttle.Rule) int {
		return cmp.Or(cmp.Compare(a.Window, b.Window), cmp.Compare(a.N, b.N))
	})
	return rules
}
