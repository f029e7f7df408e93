package progress

import (
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

func TestWaitedOn(t *testing.T) {
	r5, r500 := throttle.Rule{N: 5, Window: time.Second}, throttle.Rule{N: 500, Window: time.Minute}
	stats := func(w5, w500, slots, pause time.Duration) throttle.Stats {
		return throttle.Stats{Rules: []throttle.RuleStats{{Rule: r5, WaitTime: w5}, {Rule: r500, WaitTime: w500}},
			SlotWaitTime: slots, PauseWaitTime: pause, PauseReason: "429 Retry-After: 2"}
	}
	before := stats(time.Second, time.Second, time.Second, time.Second)
	for _, tt := range []struct {
		after throttle.Stats
		want  string
	}{
		{stats(2*time.Second, time.Second, time.Second, time.Second), "5/s"},
		{stats(2*time.Second, 3*time.Second, time.Second, time.Second), "500/m"},
		{stats(2*time.Second, time.Second, 4*time.Second, time.Second), "fleet slots"},
		{stats(2*time.Second, time.Second, time.Second, 5*time.Second), "pause: 429 Retry-After: 2"},
		{before, "queue"}, // waited for the admissions before it
	} {
		if got := WaitedOn(before, tt.after); got != tt.want {
			t.Errorf("WaitedOn(%+v) = %q, want %q", tt.after, got, tt.want)
		}
	}
}
