package gate

import (
	"fmt"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/internal/tally"
)

// Validate checks a rule set given to a backend's constructor as
// throttle.New does: every rule Valid, or a *throttle.RuleError.
func Validate(rules []throttle.Rule) error {
	for _, r := range rules {
		if !r.Valid() {
			return &throttle.RuleError{Spec: fmt.Sprintf("%d/%v", r.N, r.Window),
				Want: fmt.Sprintf("1 <= N <= %d and 0 < window <= 100 years", int64(throttle.MaxLimit))}
		}
	}
	return nil
}

// Fill copies t's counts into st (rules, admissions, waits and pauses),
// with each rule's current use as used reports it.
func Fill(st *throttle.Stats, t *tally.Tally, rules []throttle.Rule, used func(i int) int) {
	st.Rules = make([]throttle.RuleStats, len(rules))
	st.Admitted = t.Admitted
	st.Waits = t.Waits
	st.WaitTime = t.WaitTime
	st.Pauses = t.Pauses
	st.PauseWaits = t.PauseWaits
	st.PauseWaitTime = t.PauseWaitTime
	for i, r := range rules {
		u := used(i)
		rs := t.Rules[i]
		st.Rules[i] = throttle.RuleStats{
			Rule:      r,
			Used:      u,
			Usage:     float64(u) / float64(r.N),
			PeakUsage: float64(rs.PeakUsed) / float64(r.N),
			Waits:     rs.Waits,
			WaitTime:  rs.WaitTime,
		}
	}
}
