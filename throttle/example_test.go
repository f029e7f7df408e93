package throttle_test

import (
	"context"
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
	// Output:
	// 10 per 1s
	// 500 per 1m0s
	// 10000 per 24h0m0s
	// 10/s,500/m,10000/d
	// throttle: rule "10/fortnight": want a period such as s, min, h, day, 3s, 500ms or 1m30s
}

// Wait admits calls under every rule at once; it takes no in-flight slot.
func ExampleLimiter_Wait() {
	rules, _ := throttle.ParseRules("3/50ms,5/200ms")
	l, _ := throttle.New(rules)
	start := time.Now()
	for range 6 {
		if err := l.Wait(context.Background()); err != nil {
			panic(err)
		}
	}
	// Three calls at once, three more after 50ms; the sixth waits for 5/200ms.
	fmt.Println(time.Since(start) >= 200*time.Millisecond)
	// Output: true
}

// Acquire takes an in-flight slot, then the rates; release gives the slot back.
func ExampleLimiter_Acquire() {
	rules, _ := throttle.ParseRules("100/s")
	l, _ := throttle.New(rules, throttle.WithMaxInFlight(2))
	release, err := l.Acquire(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println("in flight:", l.Stats().InFlight)
	release()
	fmt.Println("in flight:", l.Stats().InFlight)
	// Output:
	// in flight: 1
	// in flight: 0
}

// Do runs a function under the gate: a slot and the rates.
func ExampleLimiter_Do() {
	rules, _ := throttle.ParseRules("10/s")
	l, _ := throttle.New(rules, throttle.WithMaxInFlight(4))
	err := l.Do(context.Background(), func(ctx context.Context) error {
		fmt.Println("called")
		return nil
	})
	fmt.Println(err, l.Stats().Admitted)
	// Output:
	// called
	// <nil> 1
}

// Stats tells which rule is closest to holding calls back: the one with
// the highest usage.
func ExampleLimiter_Stats() {
	rules, _ := throttle.ParseRules("10/s,40/min")
	l, _ := throttle.New(rules)
	now := time.Now()
	for range 8 {
		l.AllowN(now, 1)
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

// Admit takes a cost: cost rules count it, count rules count the call.
// Correct records the true cost once it is known.
func ExampleLimiter_Admit() {
	rules, _ := throttle.ParseRules("60/min,cost:90000/min") // requests and tokens per minute
	l, _ := throttle.New(rules, throttle.WithMaxInFlight(4))
	a, err := l.Admit(context.Background(), 1200) // an estimate of the tokens
	if err != nil {
		panic(err)
	}
	// ... make the call; the response says it used 800 tokens.
	if err := a.Correct(800); err != nil {
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
