package redisrate

import (
	"context"
	"time"

	"github.com/pace-cli/pace/throttle/internal/gate"
)

// Hooks for the external tests of package redisrate (package
// redisrate_test).

// Digests of the scripts, as EVALSHA sends them.
var (
	AdmitSHA   = admitScript().Hash()
	SlotsSHA   = slotsScript().Hash()
	CorrectSHA = correctScript().Hash()
	MarginSHA  = marginScript().Hash()
	RepairSHA  = repairScript().Hash()
	ResetSHA   = resetScript().Hash()
)

// Pacing of retries and slot polls.
const (
	MinBackoff = minBackoff
	MaxBackoff = maxBackoff
	SlotPoll   = slotPoll
	StallAfter = stallAfter
)

// Jitter returns a jitter l would add to a wait the script asked for.
func Jitter(l *Limiter, wait time.Duration) time.Duration { return gate.Jitter(wait, l.cf.Jitter) }

// Queued returns how many callers queue for l's admission turn.
func Queued(l *Limiter) int { return l.core.Queued() }

// ScriptLoads returns how many script calls l sent as EVAL (loading the
// script) rather than EVALSHA. Stats().Store has no field for them.
func ScriptLoads(l *Limiter) int64 { return l.scriptLoads.Load() }

// WithSlotPoll returns o with the interval at which a caller waiting for a
// fleet-wide slot asks again set to d.
func WithSlotPoll(o Options, d time.Duration) Options {
	o.slotPoll = d
	return o
}

// AdmitBatch runs one admission attempt for calls of the given costs
// (margin 0), as l's core does, and returns how many were admitted, the
// wait and rule (given order) of the first refused, and each rule's use.
func AdmitBatch(l *Limiter, costs []int) (admitted int, wait time.Duration, rule int, used []int, err error) {
	d, err := (*redisSide)(l).Admit(context.Background(), costs, 0)
	return d.Admitted, d.Wait, d.Rule, d.Used, err
}
