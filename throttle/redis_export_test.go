package throttle

import (
	"context"
	"time"
)

// Hooks for the external tests of RedisLimiter (package throttle_test,
// which can use throttletest's fake clock).

var (
	RedisAdmitSHA = redisAdmit.sha
	RedisSlotsSHA = redisSlots.sha
)

const (
	RedisMinBackoff = redisMinBackoff
	RedisMaxBackoff = redisMaxBackoff
	RedisSlotPoll   = redisSlotPoll
)

// RedisSpec returns the rule spec l stores with its quota.
func RedisSpec(l *RedisLimiter) string { return l.spec }

// RedisJitter returns a jitter l would add to wait.
func RedisJitter(l *RedisLimiter, wait time.Duration) time.Duration { return l.jitter(wait) }

// RedisQueued returns how many callers queue for l's admission turn.
func RedisQueued(l *RedisLimiter) int { return l.admitTurn.queued() }

// RedisWaitTime is Wait returning the server time of the admission.
func RedisWaitTime(ctx context.Context, l *RedisLimiter) (time.Time, error) { return l.wait(ctx) }
