package cmd

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// sharedBackend is an in-memory backend that reports itself shared with
// other processes, whose calls add fleet to the user's rule's count.
type sharedBackend struct {
	*throttle.Limiter
	fleet int
}

func (b *sharedBackend) Stats() throttle.Stats {
	st := b.Limiter.Stats()
	st.Store.Name = "redis"
	for i := range st.Rules {
		st.Rules[i].Used += b.fleet
	}
	return st
}

// learnRun admits five calls through a learner on b under 20/s, of which
// the server accepts the first `accepted` and refuses the rest with 429,
// and returns the rules the learner then keeps.
func learnRun(t *testing.T, b throttle.Backend, accepted int) []throttle.Rule {
	return learnMore(t, newLearner(b, []throttle.Rule{{N: 20, Window: time.Second}}, false, nil), 1, accepted)
}

// learnMore is learnRun on l, for calls from seq from on.
func learnMore(t *testing.T, l *learner, from int64, accepted int) []throttle.Rule {
	for seq := from; seq < from+5; seq++ {
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		job := runner.Job{Seq: seq, Attempt: 1}
		l.started(job)
		a.Release()
		time.Sleep(10 * time.Millisecond)
		code := 200
		if seq >= from+int64(accepted) {
			code = 429
		}
		l.observe(&runner.Result{Job: job, HTTP: &runner.HTTPInfo{StatusCode: code, RetryAfter: time.Second}})
	}
	return l.rules()
}

// Alone, a process that had 4 calls accepted before a refusal infers that
// the server allows about 4/s. In a fleet that filled the user's rule, the
// same refusal says a call arrived early, not that the rule is loose: the
// process must not slow to its own share, unless refusals go on. A fleet
// whose calls were refused learns its share.
func TestLearnerInFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem := func() *throttle.Limiter {
			l, err := throttle.New(throttle.Options{Rules: []throttle.Rule{{N: 20, Window: time.Second}}})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		if got := learnRun(t, mem(), 4); len(got) != 1 || got[0] != (throttle.Rule{N: 4, Window: time.Second}) {
			t.Errorf("alone: learned %v, want 4/s", got)
		}
		l := newLearner(&sharedBackend{mem(), 15}, []throttle.Rule{{N: 20, Window: time.Second}}, false, nil)
		if got := learnMore(t, l, 1, 4); len(got) != 0 {
			t.Errorf("fleet at 20/s, one refusal: learned %v, want nothing", got)
		}
		time.Sleep(time.Second)
		if got := learnMore(t, l, 6, 4); len(got) != 1 || got[0].N > 4 {
			t.Errorf("fleet at 20/s, another refusal a second later: learned %v, want this process's share", got)
		}
		if got := learnRun(t, &sharedBackend{mem(), 15}, 1); len(got) != 1 || got[0] != (throttle.Rule{N: 1, Window: time.Second}) {
			t.Errorf("fleet at 20/s, 4 of 5 refused: learned %v, want this process's share, 1/s", got)
		}
	})
}
