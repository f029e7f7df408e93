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

// checkAt returns instants t0 + offset for each offset.
func checkAt(offsets ...time.Duration) []time.Time {
	ts := make([]time.Time, len(offsets))
	for i, d := range offsets {
		ts[i] = checkT0.Add(d)
	}
	return ts
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
			earlier[k] = earlier[k].Add(-1)
			if checkLegal(rules, earlier, jobs, runtime) {
				t.Fatalf("%s: Schedule = %v, but call %d could go 1ns earlier", name, off, k)
			}
		}
	}
}

// checkLegal reports whether sorted admission instants keep every rule and the
// in-flight cap (jobs <= 0: none) with calls lasting runtime.
func checkLegal(rules []Rule, times []time.Time, jobs int, runtime time.Duration) bool {
	for _, res := range Check(rules, times) {
		if res.Violations > 0 {
			return false
		}
	}
	if jobs > 0 {
		for k := jobs; k < len(times); k++ {
			if times[k].Before(times[k-jobs].Add(runtime)) {
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
		for i, ti := range times {
			count := 0
			for j, tj := range times {
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

func ExampleFastest() {
	rules, _ := ParseRules("5/s,12/3s")
	fmt.Println(Fastest(rules, 30, 4, 0))
	// Output: 7s
}

func ExampleCheck() {
	rules, _ := ParseRules("2/s")
	t0 := time.Unix(1700000000, 0)
	calls := []time.Time{t0, t0.Add(400 * time.Millisecond), t0.Add(900 * time.Millisecond), t0.Add(1900 * time.Millisecond)}
	for _, res := range Check(rules, calls) {
		fmt.Printf("%v: %d violations, first at index %d, peak usage %.1f\n", res.Rule, res.Violations, res.First, res.PeakUsage)
	}
	// Output: 2/s: 1 violations, first at index 2, peak usage 1.5
}
