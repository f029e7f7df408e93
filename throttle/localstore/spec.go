package localstore

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/internal/link"
)

// maxKeyLen bounds a quota's name, so that its file names stay well
// within every file system's limit.
const maxKeyLen = 128

// checkKey returns why key cannot name a quota, if it cannot: a key
// becomes a file name, so it may hold only letters, digits, '.', '_' and
// '-', and may not be "." or "..".
func checkKey(key string) error {
	bad := key == "" || key == "." || key == ".." || len(key) > maxKeyLen
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("localstore: quota name %q: want 1 to %d letters, digits, '.', '_' or '-' (not \".\" or \"..\")", key, maxKeyLen)
	}
	return nil
}

// layout is what a process must agree on with the others sharing a
// quota: the rules in store order (sorted by window, count before cost,
// then by N, as redisrate sorts them), the form each is kept in, and the
// in-flight cap; spec says it in one line.
type layout struct {
	sorted     []throttle.Rule
	counter    []bool // per sorted rule: kept by a bounded counter
	globalJobs int
	spec       string
}

// newLayout returns the layout of rules with the given counter threshold
// (counterAbove >= 0) and in-flight cap, and order: order[j] is the index
// in rules of the j-th rule in store order.
func newLayout(rules []throttle.Rule, counterAbove, globalJobs int) (layout, []int) {
	order := make([]int, len(rules))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := rules[a], rules[b]
		return cmp.Or(cmp.Compare(ra.Window, rb.Window), boolCompare(ra.Cost, rb.Cost), cmp.Compare(ra.N, rb.N))
	})
	ly := layout{globalJobs: globalJobs}
	for _, i := range order {
		ly.sorted = append(ly.sorted, rules[i])
		ly.counter = append(ly.counter, rules[i].N > counterAbove)
	}
	spec := []string{throttle.FormatRules(ly.sorted)}
	if counterAbove != link.CounterAbove && slices.ContainsFunc(ly.sorted, func(r throttle.Rule) bool {
		return (r.N > counterAbove) != (r.N > link.CounterAbove)
	}) {
		spec = append(spec, "counter-above="+strconv.Itoa(counterAbove))
	}
	if globalJobs > 0 {
		spec = append(spec, "global-jobs="+strconv.Itoa(globalJobs))
	}
	ly.spec = strings.TrimSpace(strings.Join(spec, " "))
	return ly, order
}

// parseSpec reads back a spec that newLayout wrote.
func parseSpec(spec string) (layout, error) {
	counterAbove, jobs := link.CounterAbove, 0
	var rules []throttle.Rule
	for f := range strings.FieldsSeq(spec) {
		var err error
		if v, ok := strings.CutPrefix(f, "counter-above="); ok {
			counterAbove, err = strconv.Atoi(v)
		} else if v, ok := strings.CutPrefix(f, "global-jobs="); ok {
			jobs, err = strconv.Atoi(v)
		} else {
			rules, err = throttle.ParseRules(f)
		}
		if err != nil {
			return layout{}, fmt.Errorf("stored rule spec %q: %w", spec, err)
		}
	}
	ly, _ := newLayout(rules, counterAbove, jobs)
	return ly, nil
}

// bucketName names the bucket that keeps the j-th rule in store order.
func (ly layout) bucketName(j int) []byte {
	name := "r" + strconv.Itoa(j) + ":" + ly.sorted[j].String()
	if ly.counter[j] {
		name += ":counter"
	}
	return []byte(name)
}

func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
