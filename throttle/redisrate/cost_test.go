package redisrate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

func TestAdmitCost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		// Redis order: 5/s, cost:40/s, cost:100/m.
		l := openFake(t, f, "cost:100/m,5/s,cost:40/s", redisrate.Options{GlobalJobs: 1})
		a, err := l.Admit(context.Background(), 7)
		if err != nil {
			t.Fatalf("Admit(ctx, 7) = %v", err)
		}
		a.Release()
		calls := f.Calls()
		admit := calls[1] // after the slot take
		var weights []any
		for _, r := range admit.ruleArgs() {
			weights = append(weights, r[3])
		}
		if want := []any{1, 7, 7}; fmt.Sprint(weights) != fmt.Sprint(want) {
			t.Errorf("Admit(ctx, 7): weights %v for 5/s, cost:40/s, cost:100/m, want %v", weights, want)
		}
		if a.Cost != 7 {
			t.Errorf("Admission.Cost = %d, want 7", a.Cost)
		}
		// Used follows the order the rules were given.
		if s := l.Stats(); s.Rules[0].Used != 7 || s.Rules[1].Used != 1 || s.Rules[2].Used != 7 {
			t.Errorf("Stats().Rules = %+v, want used 7, 1, 7", s.Rules)
		}

		// A cost no cost rule can hold fails before any call to Redis,
		// even for the slot.
		n := len(f.Calls())
		for _, cost := range []int{0, -1, 41, 1 << 40} {
			if _, err := l.Admit(context.Background(), cost); !errors.Is(err, throttle.ErrBadCost) {
				t.Errorf("Admit(ctx, %d) = %v, want ErrBadCost", cost, err)
			}
		}
		if got := f.ops()[n:]; len(got) != 0 {
			t.Errorf("bad costs made calls %q, want none", got)
		}
		if _, err := l.Admit(context.Background(), 40); err != nil {
			t.Errorf("Admit(ctx, 40) = %v, want the largest cost admitted", err)
		}

		// Count rules alone take any cost, counted as 1.
		f = newFake()
		l = openFake(t, f, "5/s,100/m", redisrate.Options{})
		if _, err := l.Admit(context.Background(), 1_000_000); err != nil {
			t.Fatalf("Admit(ctx, 1000000) under count rules = %v", err)
		}
		for i, r := range f.Calls()[0].ruleArgs() {
			if r[3] != 1 {
				t.Errorf("rule %d: weight %v, want 1", i, r[3])
			}
		}
	})
}

func TestCorrect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.missing[redisrate.CorrectSHA] = true
		// Redis order: 5/s, cost:40/s, 100/m, cost:300000/h (a counter).
		l := openFake(t, f, "cost:300000/h,5/s,100/m,cost:40/s", redisrate.Options{Margin: time.Millisecond})
		a, err := l.Admit(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		admit := f.Calls()[0]
		time.Sleep(time.Second)
		f.setHandle(func(c fakeCall) (any, error) {
			if c.op() == "correct" {
				return corrected(25, 1000), nil
			}
			return f.scriptReply(c), nil
		})
		if err := a.Correct(context.Background(), 25); err != nil {
			t.Fatalf("Correct(25) = %v", err)
		}
		calls := f.Calls()[1:]
		if len(calls) != 2 || calls[0].op() != "correct" || calls[0].eval || !calls[1].eval {
			t.Fatalf("calls %q, want one correction: EVALSHA, NOSCRIPT, EVAL", f.ops()[1:])
		}
		c := calls[1]
		// Only the cost rules' keys, as the admission sent them, and the
		// margins; windows without margin, the caller's margin apart.
		if want := slices.Concat(admit.keys[3:5], admit.keys[7:10]); !slices.Equal(c.keys, want) {
			t.Errorf("correction keys %q, want %q", c.keys, want)
		}
		want := []any{admit.args[1], a.At.UnixMicro(), 10, 25, time.Now().UnixMicro(), int64(1000), admit.args[6],
			40, int64(1000000), "2", 0,
			300000, int64(3600000000), "1", 0}
		if fmt.Sprintf("%#v", c.args) != fmt.Sprintf("%#v", want) {
			t.Errorf("correction args %v, want %v", c.args, want)
		}
		if a.Cost != 25 {
			t.Errorf("Admission.Cost = %d after Correct(25), want 25", a.Cost)
		}
		// Used of the cost rules comes from the reply; count rules keep theirs.
		s := l.Stats()
		if got := []int{s.Rules[0].Used, s.Rules[1].Used, s.Rules[2].Used, s.Rules[3].Used}; !slices.Equal(got, []int{1000, 1, 1, 25}) {
			t.Errorf("Used = %v after the correction, want [1000 1 1 25]", got)
		}
		if s.Rules[3].PeakUsage != 25.0/40 {
			t.Errorf("cost:40/s PeakUsage = %v, want %v", s.Rules[3].PeakUsage, 25.0/40)
		}

		// No change, or a bad cost: no call.
		n := len(f.Calls())
		if err := a.Correct(context.Background(), 25); err != nil {
			t.Errorf("Correct(25) again = %v", err)
		}
		if err := a.Correct(context.Background(), 0); !errors.Is(err, throttle.ErrBadCost) {
			t.Errorf("Correct(0) = %v, want ErrBadCost", err)
		}
		if got := f.ops()[n:]; len(got) != 0 {
			t.Errorf("calls %q, want none", got)
		}

		// A reply that does not fit fails with ErrBackend and keeps the cost.
		f.setHandle(func(c fakeCall) (any, error) { return corrected(1), nil })
		if err := a.Correct(context.Background(), 3); !errors.Is(err, throttle.ErrBackend) || a.Cost != 25 {
			t.Errorf("Correct(3) with a short reply = %v, Cost %d; want ErrBackend, 25", err, a.Cost)
		}
		f.setHandle(func(c fakeCall) (any, error) {
			return nil, redisErr("WRONGTYPE Operation against a key holding the wrong kind of value")
		})
		if err := a.Correct(context.Background(), 3); !errors.Is(err, throttle.ErrBackend) || a.Cost != 25 {
			t.Errorf("Correct(3) refused by Redis = %v, Cost %d; want ErrBackend, 25", err, a.Cost)
		}

		// Without cost rules there is nothing to correct in Redis.
		f = newFake()
		l = openFake(t, f, "5/s,100/m", redisrate.Options{})
		a, err = l.Admit(context.Background(), 3)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Correct(context.Background(), 9); err != nil || a.Cost != 9 {
			t.Errorf("Correct(9) without cost rules = %v, Cost %d; want nil, 9", err, a.Cost)
		}
		if got := f.ops(); !slices.Equal(got, []string{"admit"}) {
			t.Errorf("ops = %q, want the admission only", got)
		}
	})
}
