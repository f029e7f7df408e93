package plot

import (
	"slices"
	"time"
)

// t0 is the first instant of every fixture.
var t0 = time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)

// seedRules are the rules of the seed run: 5/s AND 12/3s.
var seedRules = []Rule{
	{N: 5, Window: time.Second, Label: "5/s"},
	{N: 12, Window: 3 * time.Second, Label: "12/3s"},
}

// greedy returns the admission offsets of the fastest legal schedule of
// n calls under count rules: call k goes once call k-N has left every
// rule's window (as throttle.Schedule computes it).
func greedy(rules []Rule, n int) []time.Duration {
	off := make([]time.Duration, n)
	for k := 1; k < n; k++ {
		t := off[k-1]
		for _, r := range rules {
			if k >= r.N {
				t = max(t, off[k-r.N]+r.Window)
			}
		}
		off[k] = t
	}
	return off
}

// seedCalls returns the 30-call seed run at the greedy schedule: calls
// 0-4 at 0s, 5-9 at 1s, 10-11 at 2s, 12-16 at 3s, 17-21 at 4s, 22-23 at
// 5s, 24-28 at 6s and 29 at 7s. Runtimes vary between 0.2s and 1.1s;
// call 7 is refused (429), call 8 retried, call 20 failed.
func seedCalls() []Call {
	calls := make([]Call, 30)
	for k, off := range greedy(seedRules, len(calls)) {
		calls[k] = Call{Start: t0.Add(off), Runtime: time.Duration(200+(k*7%10)*100) * time.Millisecond}
	}
	calls[7].Outcome = Refused
	calls[8].Outcome = Retried
	calls[20].Outcome = Failed
	return calls
}

// seedPauses is one server pause, after the 429.
var seedPauses = []Pause{{From: t0.Add(1300 * time.Millisecond), To: t0.Add(1900 * time.Millisecond)}}

// bigRules are the rules of the big run: 100/s AND 5000/min AND a cost
// rule.
var bigRules = []Rule{
	{N: 100, Window: time.Second, Label: "100/s"},
	{N: 5000, Window: time.Minute, Label: "5000/min"},
	{N: 200, Window: time.Second, Cost: true, Label: "cost:200/s"},
}

// bigCalls returns n calls at the greedy schedule of the count rules in
// bigRules, in the order a job log lists them (by end, not by start),
// with runtimes from 50ms to 2s, costs from 1 to 3 (averaging 2, which
// breaks the cost rule), about 1 call in 200 failed, 1 in 500 retried and 1 in 1000
// refused. It is deterministic.
func bigCalls(n int) []Call {
	calls := make([]Call, n)
	var rnd uint64 = 1
	next := func(m uint64) uint64 { // xorshift: fast, and fixed forever
		rnd ^= rnd << 13
		rnd ^= rnd >> 7
		rnd ^= rnd << 17
		return rnd % m
	}
	for k, off := range greedy(bigRules[:2], n) {
		c := Call{Start: t0.Add(off), Runtime: time.Duration(50+next(1950)) * time.Millisecond, Cost: 1 + int(next(3))}
		switch r := next(1000); {
		case r < 5:
			c.Outcome = Failed
		case r < 7:
			c.Outcome = Retried
		case r < 8:
			c.Outcome = Refused
		}
		calls[k] = c
	}
	// A job log lists calls as they end.
	slices.SortStableFunc(calls, func(a, b Call) int {
		return a.Start.Add(a.Runtime).Compare(b.Start.Add(b.Runtime))
	})
	return calls
}

// slicesSortedByStart returns a copy of calls sorted by Start.
func slicesSortedByStart(calls []Call) []Call {
	s := slices.Clone(calls)
	slices.SortStableFunc(s, func(a, b Call) int { return a.Start.Compare(b.Start) })
	return s
}
