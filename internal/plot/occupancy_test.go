package plot

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// bruteUsed returns the load of rule's window (t-Window, t] by
// definition: the calls, or their costs, that started in it.
func bruteUsed(rule Rule, calls []Call, t time.Time) int64 {
	var used int64
	for _, c := range calls {
		if c.Start.After(t.Add(-rule.Window)) && !c.Start.After(t) {
			if rule.Cost {
				used += int64(max(c.Cost, 1))
			} else {
				used++
			}
		}
	}
	return used
}

// randomCalls returns up to 60 calls on a 100ms grid, so that many share
// an instant and many leave a window just as others enter, with costs
// from -1 to 5 (below 1 counts as 1).
func randomCalls(rnd *rand.Rand) []Call {
	calls := make([]Call, rnd.IntN(61))
	for i := range calls {
		calls[i] = Call{
			Start: t0.Add(time.Duration(rnd.IntN(50)) * 100 * time.Millisecond),
			Cost:  rnd.IntN(7) - 1,
		}
	}
	return calls
}

// TestOccupancyBruteForce compares Occupancy with a count by definition,
// at every step, half-way between steps, and before and after them, for
// count and cost rules over random calls.
func TestOccupancyBruteForce(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(7, 11))
	for trial := range 500 {
		calls := randomCalls(rnd)
		rule := Rule{N: 1 + rnd.IntN(10), Window: time.Duration(1+rnd.IntN(20)) * 100 * time.Millisecond, Cost: rnd.IntN(2) == 0}
		before := slices.Clone(calls)
		steps := Occupancy(rule, calls)
		if !slices.Equal(calls, before) {
			t.Fatalf("trial %d: Occupancy changed its calls", trial)
		}
		if len(calls) == 0 {
			if steps != nil {
				t.Errorf("trial %d: Occupancy(%+v, no calls) = %v, want nil", trial, rule, steps)
			}
			continue
		}
		check := func(at time.Time, want int64, what string) {
			t.Helper()
			if got := bruteUsed(rule, calls, at); got != want {
				t.Fatalf("trial %d: rule %+v: %s %v: Occupancy says %d, brute force %d", trial, rule, what, at.Sub(t0), want, got)
			}
		}
		check(steps[0].At.Add(-time.Nanosecond), 0, "before the first step")
		if last := steps[len(steps)-1]; last.Used != 0 {
			t.Errorf("trial %d: last step %+v, want 0", trial, last)
		}
		var peak int64
		for i, s := range steps {
			check(s.At, s.Used, "at step")
			if i+1 < len(steps) {
				next := steps[i+1]
				if !next.At.After(s.At) || next.Used == s.Used {
					t.Fatalf("trial %d: steps %d and %d: %+v then %+v: want later instants and changed values", trial, i, i+1, s, next)
				}
				check(s.At.Add(next.At.Sub(s.At)/2), s.Used, "between steps")
				check(next.At.Add(-time.Nanosecond), s.Used, "just before the next step")
			} else {
				check(s.At.Add(time.Hour), 0, "after the last step")
			}
			if want := float64(s.Used) / float64(rule.N); s.Fraction != want {
				t.Errorf("trial %d: step %+v: Fraction = %v, want %v", trial, s, s.Fraction, want)
			}
			peak = max(peak, s.Used)
		}
		var brutePeak int64
		for _, c := range calls {
			brutePeak = max(brutePeak, bruteUsed(rule, calls, c.Start))
		}
		if peak != brutePeak {
			t.Errorf("trial %d: peak %d, brute force %d", trial, peak, brutePeak)
		}
	}
}

// TestOccupancySeed checks the peaks of the seed run: the greedy schedule
// fills both rules exactly; one more call breaks 5/s.
func TestOccupancySeed(t *testing.T) {
	calls := seedCalls()
	for _, r := range seedRules {
		if got := peakFraction(Occupancy(r, calls)); got != 1 {
			t.Errorf("Occupancy(%s, seed run): peak %v, want exactly 1", r.Label, got)
		}
	}
	calls = append(calls, Call{Start: t0.Add(6 * time.Second)})
	if got := peakFraction(Occupancy(seedRules[0], calls)); got != 1.2 {
		t.Errorf("Occupancy(5/s, seed run and a sixth call at 6s): peak %v, want 1.2", got)
	}
	if got := peakFraction(Occupancy(seedRules[1], calls)); got != 13.0/12 {
		t.Errorf("Occupancy(12/3s, seed run and a 13th call in (3s, 6s]): peak %v, want 13/12", got)
	}
}

func peakFraction(steps []Step) float64 {
	peak := 0.0
	for _, s := range steps {
		peak = max(peak, s.Fraction)
	}
	return peak
}

// TestOccupancyEdges covers windows that hold nothing, one instant and
// costs.
func TestOccupancyEdges(t *testing.T) {
	three := []Call{{Start: t0, Cost: 4}, {Start: t0}, {Start: t0, Cost: -3}}
	tests := []struct {
		name  string
		rule  Rule
		calls []Call
		want  []Step
	}{
		{"no calls", Rule{N: 1, Window: time.Second}, nil, nil},
		{"empty window", Rule{N: 1, Window: 0}, three, nil},
		{"one instant", Rule{N: 2, Window: time.Second}, three, []Step{
			{At: t0, Used: 3, Fraction: 1.5},
			{At: t0.Add(time.Second), Used: 0, Fraction: 0},
		}},
		{"cost", Rule{N: 2, Window: time.Second, Cost: true}, three, []Step{
			{At: t0, Used: 6, Fraction: 3},
			{At: t0.Add(time.Second), Used: 0, Fraction: 0},
		}},
		{"leave as another enters", Rule{N: 1, Window: time.Second}, []Call{{Start: t0.Add(time.Second)}, {Start: t0}}, []Step{
			{At: t0, Used: 1, Fraction: 1},
			{At: t0.Add(2 * time.Second), Used: 0, Fraction: 0},
		}},
	}
	for _, tt := range tests {
		if got := Occupancy(tt.rule, tt.calls); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Occupancy = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestBinnedMaxima checks the binning of both sweeps against a brute
// force that evaluates the occupancy or the calls in flight at every
// nanosecond of a short axis: each bin must hold exactly the largest
// value taken anywhere in it.
func TestBinnedMaxima(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 5))
	for trial := range 300 {
		recs := make([]record, rnd.IntN(30))
		ends := make([]int64, len(recs))
		var span int64 = 1
		for i := range recs {
			recs[i] = record{start: rnd.Int64N(200), cost: int32(1 + rnd.IntN(3))}
			ends[i] = recs[i].start + rnd.Int64N(60)
			span = max(span, ends[i])
		}
		slices.SortFunc(recs, func(a, b record) int { return int(a.start - b.start) })
		slices.Sort(ends)
		rule := Rule{N: 3, Window: time.Duration(1 + rnd.IntN(40)), Cost: rnd.IntN(2) == 0}
		bins := newBinner(1+rnd.IntN(40), span)

		fold := newBinFold(bins, span)
		sweepOccupancy(recs, rule, fold.set)
		occ := func(t int64) (v int64) {
			for _, r := range recs {
				if r.start > t-int64(rule.Window) && r.start <= t {
					v += r.weight(rule)
				}
			}
			return v
		}
		compareBins(t, trial, "occupancy", fold.finish(), bruteBins(bins, span, occ))

		fold = newBinFold(bins, span)
		sweepInflight(recs, ends, fold.set)
		inflight := func(t int64) (v int64) {
			// Pair starts and ends by count: only how many are in
			// flight matters, and both lists are sorted.
			for _, r := range recs {
				if r.start <= t {
					v++
				}
			}
			for _, e := range ends {
				if e <= t {
					v--
				}
			}
			return v
		}
		compareBins(t, trial, "in flight", fold.finish(), bruteBins(bins, span, inflight))
	}
}

// bruteBins returns the largest value of f over the instants of each bin
// of [0, span].
func bruteBins(bins binner, span int64, f func(int64) int64) []int64 {
	maxs := make([]int64, bins.n)
	seen := make([]bool, bins.n)
	for t := range span + 1 {
		b := bins.of(t)
		if v := f(t); !seen[b] || v > maxs[b] {
			maxs[b], seen[b] = v, true
		}
	}
	return maxs
}

func compareBins(t *testing.T, trial int, what string, got, want []int64) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("trial %d: %s per bin = %v, want %v", trial, what, got, want)
	}
}
