package throttle_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pace-cli/pace/throttle"
)

func ExampleParseRules() {
	rules, err := throttle.ParseRules("10/s,500/min,10000/day")
	if err != nil {
		panic(err)
	}
	for _, r := range rules {
		fmt.Println(r.N, "per", r.Window)
	}
	fmt.Println(throttle.FormatRules(rules))
	_, err = throttle.ParseRules("10/fortnight")
	fmt.Println(err)
	var re *throttle.RuleError
	fmt.Println(errors.As(err, &re), re.Want)
	// Output:
	// 10 per 1s
	// 500 per 1m0s
	// 10000 per 24h0m0s
	// 10/s,500/m,10000/d
	// throttle: rule "10/fortnight": want a period such as s, min, h, day, 3s, 500ms or 1m30s
	// true a period such as s, min, h, day, 3s, 500ms or 1m30s
}

// A cost rule counts what each call weighs (tokens, bytes) instead of
// calls.
func ExampleParseRule() {
	r, _ := throttle.ParseRule("cost:90000/min")
	fmt.Println(r.N, r.Window, r.Cost, r)
	// Output: 90000 1m0s true cost:90000/m
}

// Admit waits until every rule has room, records the call at one instant
// and returns the Admission; Release gives back its in-flight slot once
// the call has ended.
func ExampleLimiter_Admit() {
	rules, _ := throttle.ParseRules("3/50ms,5/200ms")
	l, _ := throttle.New(throttle.Options{Rules: rules, MaxInFlight: 2})
	ctx := context.Background()
	var first, last time.Time
	for i := range 6 {
		a, err := l.Admit(ctx, 1)
		if err != nil {
			panic(err)
		}
		// ... make the call ...
		a.Release()
		if i == 0 {
			first = a.At
		}
		last = a.At
	}
	// Three calls at once, two more after 50ms; the sixth waits for 5/200ms.
	fmt.Println(last.Sub(first) >= 200*time.Millisecond)
	// Output: true
}

// Do admits a call, runs a function and releases the admission when it
// returns: the release cannot be forgotten.
func ExampleDo() {
	rules, _ := throttle.ParseRules("10/s")
	l, _ := throttle.New(throttle.Options{Rules: rules, MaxInFlight: 4})
	err := throttle.Do(context.Background(), l, 1, func(a *throttle.Admission) error {
		fmt.Println("in flight:", l.Stats().InFlight)
		return nil
	})
	fmt.Println(err, "in flight:", l.Stats().InFlight)
	// Output:
	// in flight: 1
	// <nil> in flight: 0
}

// Admit takes a cost: cost rules count it, count rules count the call.
// Correct records the true cost once it is known.
func ExampleAdmission_Correct() {
	rules, _ := throttle.ParseRules("60/min,cost:90000/min") // requests and tokens per minute
	l, _ := throttle.New(throttle.Options{Rules: rules})
	a, err := l.Admit(context.Background(), 1200) // an estimate of the tokens
	if err != nil {
		panic(err)
	}
	// ... make the call; the response says it used 800 tokens.
	if err := a.Correct(context.Background(), 800); err != nil {
		panic(err)
	}
	a.Release()
	for _, r := range l.Stats().Rules {
		fmt.Printf("%v: %d used\n", r.Rule, r.Used)
	}
	// Output:
	// 60/m: 1 used
	// cost:90000/m: 800 used
}

// Without a cap, an admission still counts in flight until released: a
// forgotten Release shows in Stats. Releasing twice, or a copy, frees
// nothing more.
func ExampleAdmission_Release() {
	rules, _ := throttle.ParseRules("100/s")
	l, _ := throttle.New(throttle.Options{Rules: rules})
	a, _ := l.Admit(context.Background(), 1)
	fmt.Println("in flight:", l.Stats().InFlight)
	b := a
	a.Release()
	b.Release()
	fmt.Println("in flight:", l.Stats().InFlight)
	// Output:
	// in flight: 1
	// in flight: 0
}

// AllowN and DelayN decide at an instant the caller brings, without
// waiting: a simulation, or a caller with a clock of its own.
func ExampleLimiter_AllowN() {
	rules, _ := throttle.ParseRules("2/s")
	l, _ := throttle.New(throttle.Options{Rules: rules})
	t0 := time.Now() // instants before the limiter's first are taken as that one
	for _, at := range []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, time.Second} {
		a, ok := l.AllowN(t0.Add(at), 1)
		if ok {
			a.Release()
		}
		fmt.Println(at, ok)
	}
	// Output:
	// 0s true
	// 100ms true
	// 200ms false
	// 1s true
}

func ExampleLimiter_DelayN() {
	rules, _ := throttle.ParseRules("2/s,cost:10/s")
	l, _ := throttle.New(throttle.Options{Rules: rules})
	t0 := time.Now()
	a, _ := l.AllowN(t0, 8)
	a.Release()
	fmt.Println(l.DelayN(t0, 2), l.DelayN(t0, 3), l.DelayN(t0.Add(400*time.Millisecond), 3))
	// Output: 0s 1s 600ms
}

// PauseUntil holds every admission until a server's Retry-After has
// passed.
func ExampleLimiter_PauseUntil() {
	rules, _ := throttle.ParseRules("100/s")
	l, _ := throttle.New(throttle.Options{Rules: rules})
	until := time.Now().Add(30 * time.Millisecond)
	l.PauseUntil(until, "429 Retry-After")
	a, _ := l.Admit(context.Background(), 1)
	a.Release()
	fmt.Println(!a.At.Before(until), l.Stats().PauseReason)
	// Output: true 429 Retry-After
}

// Seed carries an earlier run's calls over, so that a daily quota holds
// across restarts.
func ExampleLimiter_Seed() {
	rules, _ := throttle.ParseRules("3/h")
	l, _ := throttle.New(throttle.Options{Rules: rules})
	now := time.Now()
	if err := l.Seed([]throttle.Call{{At: now.Add(-time.Minute), Cost: 1}, {At: now.Add(-2 * time.Minute), Cost: 1}}); err != nil {
		panic(err)
	}
	fmt.Println(l.Stats().Rules[0].Used)
	// Output: 2
}

// SetMargin widens every window: a call leaves the rule d later.
func ExampleLimiter_SetMargin() {
	rules, _ := throttle.ParseRules("1/s")
	l, _ := throttle.New(throttle.Options{Rules: rules})
	t0 := time.Now()
	a, _ := l.AllowN(t0, 1)
	a.Release()
	l.SetMargin(250 * time.Millisecond)
	fmt.Println(l.DelayN(t0, 1), l.Stats().Margin)
	// Output: 1.25s 250ms
}

// Stats tells which rule is closest to holding calls back: the one with
// the highest usage.
func ExampleStats_Busiest() {
	rules, _ := throttle.ParseRules("10/s,40/min")
	l, _ := throttle.New(throttle.Options{Rules: rules})
	now := time.Now()
	for range 8 {
		a, _ := l.AllowN(now, 1)
		a.Release()
	}
	s := l.Stats()
	for _, r := range s.Rules {
		fmt.Printf("%v: %.0f%% used\n", r.Rule, 100*r.Usage)
	}
	fmt.Println("busiest:", s.Rules[s.Busiest()].Rule)
	// Output:
	// 10/s: 80% used
	// 40/m: 20% used
	// busiest: 10/s
}

// Close makes waiting and later admissions fail with ErrClosed.
func ExampleLimiter_Close() {
	l, _ := throttle.New(throttle.Options{})
	_ = l.Close()
	_, err := l.Admit(context.Background(), 1)
	fmt.Println(errors.Is(err, throttle.ErrClosed))
	// Output: true
}

// Plan is the fastest legal schedule: when each call may go at the
// earliest, given the calls already made.
func ExamplePlan() {
	rules, _ := throttle.ParseRules("2/s,3/10s")
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, at := range throttle.Plan(rules, nil, []int{1, 1, 1, 1}, t0, 0, 0) {
		fmt.Println(at.Sub(t0))
	}
	// Output:
	// 0s
	// 0s
	// 1s
	// 10s
}

// MaxCost is the most one call may cost under rules: more could never be
// admitted.
func ExampleMaxCost() {
	rules, _ := throttle.ParseRules("10/s,cost:500/s,cost:2000/min")
	fmt.Println(throttle.MaxCost(rules))
	_, err := func() (throttle.Admission, error) {
		l, _ := throttle.New(throttle.Options{Rules: rules})
		return l.Admit(context.Background(), 501)
	}()
	fmt.Println(errors.Is(err, throttle.ErrBadCost))
	// Output:
	// 500
	// true
}

// New takes every setting in Options; the zero value of each field but
// Rules is the default.
func ExampleNew() {
	rules, _ := throttle.ParseRules("10/s,cost:90000/min")
	l, err := throttle.New(throttle.Options{Rules: rules, MaxInFlight: 8, Margin: 20 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	s := l.Stats()
	fmt.Println(len(s.Rules), s.MaxInFlight, s.Margin)
	_, err = throttle.New(throttle.Options{Rules: []throttle.Rule{{N: 0, Window: time.Second}}})
	var re *throttle.RuleError
	fmt.Println(errors.As(err, &re))
	// Output:
	// 2 8 20ms
	// true
}

// A shared backend refuses a process whose rules differ from the ones
// its quota is kept with.
func ExampleMismatchError() {
	var err error = &throttle.MismatchError{Key: "openai", Stored: "10/s", Spec: "20/s"}
	var me *throttle.MismatchError
	if errors.As(err, &me) {
		fmt.Printf("stored %s, mine %s\n", me.Stored, me.Spec)
	}
	// Output: stored 10/s, mine 20/s
}

func ExampleRule_Valid() {
	fmt.Println(throttle.Rule{N: 10, Window: time.Second}.Valid(), throttle.Rule{N: 10}.Valid())
	// Output: true false
}
