package progress

import (
	"time"

	"github.com/pace-cli/pace/throttle"
)

// WaitedOn names what an admission waited on, from the backend's
// statistics before and after it: the rule whose wait time grew most, the
// fleet's slots, or a pause; "queue" when none grew (it waited for the
// admissions before it). It tells one admission's cause only when no
// other admission overlapped it.
func WaitedOn(before, after throttle.Stats) string {
	best, bestGrowth := "", time.Duration(0)
	for i, r := range after.Rules {
		if i >= len(before.Rules) {
			break
		}
		if g := r.WaitTime - before.Rules[i].WaitTime; g > bestGrowth {
			best, bestGrowth = r.Rule.String(), g
		}
	}
	if g := after.SlotWaitTime - before.SlotWaitTime; g > bestGrowth {
		best, bestGrowth = "fleet slots", g
	}
	if g := after.PauseWaitTime - before.PauseWaitTime; g > bestGrowth {
		best = "pause: " + after.PauseReason
	}
	if best == "" {
		best = "queue"
	}
	return best
}
