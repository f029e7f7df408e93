package throttle

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var checkT0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// checkAt returns calls of cost 1 at instants t0 + offset for each offset.
func checkAt(offsets ...time.Duration) []Call {
	cs := make([]Call, len(offsets))
	for i, d := range offsets {
		cs[i] = Call{At: checkT0.Add(d), Cost: 1}
	}
	return cs
}

func TestCheck(t *testing.T) {
	const ms = time.Millisecond
	r3s := Rule{N: 3, Window: time.Second}
	tests := []struct {
		name  string
		rule  Rule
		calls []time.Duration
		want  CheckResult // Rule is filled in
	}{
		{"no calls", r3s, nil, CheckResult{First: -1}},
		{"exactly N in the window is legal", r3s, []time.Duration{0, 10 * ms, 20 * ms},
			CheckResult{First: -1, Peak: 3, PeakUsage: 1}},
		{"N+1 in the window: the last one violates", r3s, []time.Duration{0, 10 * ms, 20 * ms, 999 * ms},
			CheckResult{Violations: 1, First: 3, Peak: 4, PeakUsage: 4.0 / 3}},
		{"a call exactly Window after is legal", r3s, []time.Duration{0, 10 * ms, 20 * ms, 1000 * ms},
			CheckResult{First: -1, Peak: 3, PeakUsage: 1}},
		{"one nanosecond early violates", r3s, []time.Duration{0, 10 * ms, 20 * ms, time.Second - 1},
			CheckResult{Violations: 1, First: 3, Peak: 4, PeakUsage: 4.0 / 3}},
		{"equal instants count in input order", r3s, []time.Duration{0, 0, 0, 0, 0},
			CheckResult{Violations: 2, First: 3, Peak: 5, PeakUsage: 5.0 / 3}},
		{"unsorted input: First indexes the input", r3s, []time.Duration{999 * ms, 500 * ms, 0, 10 * ms, 20 * ms},
			// sorted: 0(2) 10(3) 20(4) 500(1) 999(0); 500 and 999 both see 4+ calls
			CheckResult{Violations: 2, First: 1, Peak: 5, PeakUsage: 5.0 / 3}},
		{"steady rate at the limit", Rule{N: 2, Window: 100 * ms},
			[]time.Duration{0, 0, 100 * ms, 100 * ms, 200 * ms, 200 * ms},
			CheckResult{First: -1, Peak: 2, PeakUsage: 1}},
		{"burst after a long pause is legal", r3s,
			[]time.Duration{0, 1 * ms, 2 * ms, 5 * time.Second, 5*time.Second + 1, 5*time.Second + 2},
			CheckResult{First: -1, Peak: 3, PeakUsage: 1}},
		{"violations are counted per call", Rule{N: 1, Window: time.Second},
			[]time.Duration{0, 500 * ms, 999 * ms, 1998 * ms, 2998 * ms},
			// 500 sees {0,500}; 999 sees {0,500,999}; 1998 sees {999,1998};
			// 2998 sees only itself: (1998, 2998] excludes 1998
			CheckResult{Violations: 3, First: 1, Peak: 3, PeakUsage: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			times := checkAt(tt.calls...)
			orig := slices.Clone(times)
			got := Check([]Rule{tt.rule}, times)
			tt.want.Rule = tt.rule
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("Check(%v, %v) = %+v, want [%+v]", tt.rule, tt.calls, got, tt.want)
			}
			if !slices.Equal(times, orig) {
				t.Errorf("Check modified its input: %v, want %v", times, orig)
			}
		})
	}
}

func TestCheckSeveralRules(t *testing.T) {
	rules := []Rule{{N: 5, Window: time.Second}, {N: 12, Window: 3 * time.Second}}
	// Bursts of 6 calls at 0s, 1s and 2s: breaks both rules.
	var calls []time.Duration
	for s := range 3 {
		for range 6 {
			calls = append(calls, time.Duration(s)*time.Second)
		}
	}
	got := Check(rules, checkAt(calls...))
	want := []CheckResult{
		// the 6th call of each burst
		{Rule: rules[0], Violations: 3, First: 5, Peak: 6, PeakUsage: 6.0 / 5},
		// calls 13..18 (indices 12..17) each see more than 12 in 3s
		{Rule: rules[1], Violations: 6, First: 12, Peak: 18, PeakUsage: 18.0 / 12},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Check(%v, 3 bursts of 6) =\n%+v, want\n%+v", rules, got, want)
	}
}

func TestFastest(t *testing.T) {
	r5s := Rule{N: 5, Window: time.Second}
	r12in3s := Rule{N: 12, Window: 3 * time.Second}
	tests := []struct {
		name    string
		rules   []Rule
		n, jobs int
		runtime time.Duration
		want    time.Duration
	}{
		{"no calls", []Rule{r5s}, 0, 0, 0, 0},
		{"one call", []Rule{r5s}, 1, 0, 0, 0},
		{"a burst of N is instant", []Rule{r5s}, 5, 0, 0, 0},
		{"N+1 waits one window", []Rule{r5s}, 6, 0, 0, time.Second},
		{"30 calls under 5/s and 12/3s", []Rule{r5s, r12in3s}, 30, 0, 0, 7 * time.Second},
		{"same with 4 in flight and zero runtime", []Rule{r5s, r12in3s}, 30, 4, 0, 7 * time.Second},
		{"rule order does not matter", []Rule{r12in3s, r5s}, 30, 0, 0, 7 * time.Second},
		{"5/s alone would take 5s", []Rule{r5s}, 30, 0, 0, 5 * time.Second},
		{"the in-flight cap binds", []Rule{r5s}, 10, 2, 2 * time.Second, 8 * time.Second},
		{"no rules, cap only", nil, 7, 3, time.Second, 2 * time.Second},
		{"no rules, no cap", nil, 100, 0, time.Hour, 0},
		{"negative runtime counts as zero", nil, 7, 3, -time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Fastest(tt.rules, tt.n, tt.jobs, tt.runtime); got != tt.want {
				t.Errorf("Fastest(%v, %d, %d, %v) = %v, want %v", tt.rules, tt.n, tt.jobs, tt.runtime, got, tt.want)
			}
		})
	}
}

func TestScheduleSteps(t *testing.T) {
	rules := []Rule{{N: 5, Window: time.Second}, {N: 12, Window: 3 * time.Second}}
	s := time.Second
	want := []time.Duration{
		0, 0, 0, 0, 0, // 5/s
		s, s, s, s, s,
		2 * s, 2 * s, // 12/3s binds
		3 * s, 3 * s, 3 * s, 3 * s, 3 * s,
		4 * s, 4 * s, 4 * s, 4 * s, 4 * s,
		5 * s, 5 * s,
		6 * s, 6 * s, 6 * s, 6 * s, 6 * s,
		7 * s,
	}
	if got := Schedule(rules, 30, 0, 0); !slices.Equal(got, want) {
		t.Errorf("Schedule(%v, 30, 0, 0) =\n%v, want\n%v", rules, got, want)
	}
}

func TestScheduleSaturates(t *testing.T) {
	rules := []Rule{{N: 1, Window: maxWindow}}
	got := Schedule(rules, 5, 0, 0)
	if got[4] != math.MaxInt64 || !slices.IsSorted(got) {
		t.Errorf("Schedule(%v, 5, 0, 0) = %v, want sorted, ending at the largest Duration", rules, got)
	}
}

// TestScheduleIsLegalAndTight checks Schedule against Check on random rule
// sets: the schedule breaks no rule, and moving any call 1ns earlier
// (when that keeps the order) breaks some rule or the in-flight cap.
func TestScheduleIsLegalAndTight(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		var rules []Rule
		for range 1 + rng.IntN(3) {
			rules = append(rules, Rule{N: 1 + rng.IntN(6), Window: time.Duration(1+rng.IntN(50)) * time.Millisecond})
		}
		n, jobs := 1+rng.IntN(40), rng.IntN(5)
		runtime := time.Duration(rng.IntN(20)) * time.Millisecond
		name := fmt.Sprintf("trial %d: %v n=%d jobs=%d runtime=%v", trial, rules, n, jobs, runtime)

		off := Schedule(rules, n, jobs, runtime)
		times := checkAt(off...)
		if !checkLegal(rules, times, jobs, runtime) {
			t.Fatalf("%s: Schedule = %v breaks a rule: %+v", name, off, Check(rules, times))
		}
		for k := 1; k < n; k++ {
			if off[k] == off[k-1] {
				continue // cannot move earlier without reordering
			}
			earlier := slices.Clone(times)
			earlier[k].At = earlier[k].At.Add(-1)
			if checkLegal(rules, earlier, jobs, runtime) {
				t.Fatalf("%s: Schedule = %v, but call %d could go 1ns earlier", name, off, k)
			}
		}
	}
}

// checkLegal reports whether sorted admissions keep every rule and the
// in-flight cap (jobs <= 0: none) with calls lasting runtime.
func checkLegal(rules []Rule, calls []Call, jobs int, runtime time.Duration) bool {
	for _, res := range Check(rules, calls) {
		if res.Violations > 0 {
			return false
		}
	}
	if jobs > 0 {
		for k := jobs; k < len(calls); k++ {
			if calls[k].At.Before(calls[k-jobs].At.Add(runtime)) {
				return false
			}
		}
	}
	return true
}

func TestCheckAgreesWithBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		r := Rule{N: 1 + rng.IntN(4), Window: time.Duration(1+rng.IntN(10)) * time.Millisecond}
		calls := make([]time.Duration, rng.IntN(30))
		for i := range calls {
			calls[i] = time.Duration(rng.IntN(40)) * time.Millisecond / 2
		}
		times := checkAt(calls...)
		got := Check([]Rule{r}, times)[0]

		// Brute force: call i counts calls j in (t_i-W, t_i] that come
		// before it in time, or at the same instant and not after it in input.
		want := CheckResult{Rule: r, First: -1}
		firstAt := time.Time{}
		for i, ci := range times {
			ti := ci.At
			count := 0
			for j, cj := range times {
				tj := cj.At
				if tj.After(ti.Add(-r.Window)) && (tj.Before(ti) || tj.Equal(ti) && j <= i) {
					count++
				}
			}
			want.Peak = max(want.Peak, count)
			if count > r.N {
				want.Violations++
				if want.First < 0 || ti.Before(firstAt) {
					want.First, firstAt = i, ti
				}
			}
		}
		want.PeakUsage = float64(want.Peak) / float64(r.N)
		if got != want {
			t.Fatalf("trial %d: Check(%v, %v) = %+v, want %+v", trial, r, calls, got, want)
		}
	}
}

func ExampleCheck() {
	rules, _ := ParseRules("2/s")
	t0 := time.Unix(1700000000, 0)
	calls := calls1(t0, t0.Add(400*time.Millisecond), t0.Add(900*time.Millisecond), t0.Add(1900*time.Millisecond))
	for _, res := range Check(rules, calls) {
		fmt.Printf("%v: %d violations, first at index %d, peak usage %.1f\n", res.Rule, res.Violations, res.First, res.PeakUsage)
	}
	// Output: 2/s: 1 violations, first at index 2, peak usage 1.5
}

func TestCheckCosts(t *testing.T) {
	const ms = time.Millisecond
	rules := []Rule{{N: 2, Window: time.Second}, {N: 10, Window: time.Second, Cost: true}}
	calls := []Call{
		{At: checkT0, Cost: 4},
		{At: checkT0.Add(100 * ms), Cost: 6},  // 10: at the limit
		{At: checkT0.Add(1000 * ms), Cost: 7}, // (0, 1s] holds 6+7 = 13: the 4 at 0 has left
		{At: checkT0.Add(1100 * ms), Cost: 0}, // counts as 1
	}
	got := Check(rules, calls)
	want := []CheckResult{
		{Rule: rules[0], First: -1, Peak: 2, PeakUsage: 1},
		// (0, 1s] holds 6+7 = 13 at 1s: a violation; (100ms, 1.1s] holds 7+1.
		{Rule: rules[1], Violations: 1, First: 2, Peak: 13, PeakUsage: 1.3},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Check(%v, %v) =\n%+v, want\n%+v", rules, calls, got, want)
	}
}

func TestScheduleCosts(t *testing.T) {
	s := time.Second
	rules := []Rule{{N: 5, Window: s}, {N: 100, Window: s, Cost: true}}
	got := ScheduleCosts(rules, []int{60, 30, 20, 50, 1, 100}, 0, 0)
	// 60+30 fit at 0; 20 would make 110, so it waits for the 60 to leave
	// (1s); 50 fits with 30+20; 1 fits once the 30 has left, also at 1s;
	// 100 needs the window empty: the calls of 1s leave at 2s.
	want := []time.Duration{0, 0, s, s, s, 2 * s}
	if !slices.Equal(got, want) {
		t.Errorf("ScheduleCosts = %v, want %v", got, want)
	}
}

// ScheduleCosts is legal and tight for random costs, as Schedule is for
// counts: moving any call 1ns earlier breaks a rule or the cap.
func TestScheduleCostsIsLegalAndTight(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		rules := []Rule{{N: 1 + rng.IntN(6), Window: time.Duration(1+rng.IntN(50)) * time.Millisecond}}
		maxCost := 1 + rng.IntN(30)
		for range rng.IntN(3) {
			rules = append(rules, Rule{N: maxCost + rng.IntN(40), Window: time.Duration(1+rng.IntN(50)) * time.Millisecond, Cost: true})
		}
		n, jobs := 1+rng.IntN(40), rng.IntN(5)
		runtime := time.Duration(rng.IntN(20)) * time.Millisecond
		costs := make([]int, n)
		for i := range costs {
			costs[i] = 1 + rng.IntN(maxCost)
		}
		name := fmt.Sprintf("trial %d: %v costs=%v jobs=%d runtime=%v", trial, rules, costs, jobs, runtime)
		off := ScheduleCosts(rules, costs, jobs, runtime)
		calls := make([]Call, n)
		for i := range calls {
			calls[i] = Call{At: checkT0.Add(off[i]), Cost: costs[i]}
		}
		if !checkLegal(rules, calls, jobs, runtime) {
			t.Fatalf("%s: ScheduleCosts = %v breaks a rule: %+v", name, off, Check(rules, calls))
		}
		for k := 1; k < n; k++ {
			if off[k] == off[k-1] {
				continue
			}
			earlier := slices.Clone(calls)
			earlier[k].At = earlier[k].At.Add(-1)
			if checkLegal(rules, earlier, jobs, runtime) {
				t.Fatalf("%s: ScheduleCosts = %v, but call %d could go 1ns earlier", name, off, k)
			}
		}
	}
}

func TestCheckCostsAgreesWithBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 300 {
		r := Rule{N: 1 + rng.IntN(20), Window: time.Duration(1+rng.IntN(10)) * time.Millisecond, Cost: true}
		calls := make([]Call, rng.IntN(30))
		for i := range calls {
			calls[i] = Call{At: checkT0.Add(time.Duration(rng.IntN(40)) * time.Millisecond / 2), Cost: 1 + rng.IntN(8)}
		}
		got := Check([]Rule{r}, calls)[0]
		want := CheckResult{Rule: r, First: -1}
		var firstAt time.Time
		for i, ci := range calls {
			held := 0
			for j, cj := range calls {
				if cj.At.After(ci.At.Add(-r.Window)) && (cj.At.Before(ci.At) || cj.At.Equal(ci.At) && j <= i) {
					held += cj.Cost
				}
			}
			want.Peak = max(want.Peak, held)
			if held > r.N {
				want.Violations++
				if want.First < 0 || ci.At.Before(firstAt) {
					want.First, firstAt = i, ci.At
				}
			}
		}
		want.PeakUsage = float64(want.Peak) / float64(r.N)
		if got != want {
			t.Fatalf("trial %d: Check(%v, %v) = %+v, want %+v", trial, r, calls, got, want)
		}
	}
}

// Plan with no history is ScheduleCosts; with history it counts what the
// past already spent of each window.
func TestPlan(t *testing.T) {
	s := time.Second
	rules := []Rule{{N: 5, Window: s}, {N: 12, Window: 3 * s}}
	start := checkT0.Add(10 * s)
	ones := make([]int, 30)
	for i := range ones {
		ones[i] = 1
	}
	got := Plan(rules, nil, ones, start, 0, 0)
	for i, off := range Schedule(rules, 30, 0, 0) {
		if !got[i].Equal(start.Add(off)) {
			t.Fatalf("Plan without history: call %d at %v, want %v", i, got[i].Sub(start), off)
		}
	}
	// 5 calls spent 500ms ago: the next 5 wait until they leave.
	var past []Call
	for range 5 {
		past = append(past, Call{At: start.Add(-500 * time.Millisecond), Cost: 1})
	}
	got = Plan(rules, past, ones[:6], start, 0, 0)
	if d := got[0].Sub(start); d != 500*time.Millisecond {
		t.Errorf("first call after 5 recent ones at +%v, want +500ms", d)
	}
	if d := got[5].Sub(start); d != 1500*time.Millisecond {
		t.Errorf("sixth call at +%v, want +1.5s", d)
	}
}

// calls1 returns one call of cost 1 per instant.
func calls1(times ...time.Time) []Call {
	cs := make([]Call, len(times))
	for i, t := range times {
		cs[i] = Call{At: t, Cost: 1}
	}
	return cs
}
