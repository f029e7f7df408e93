package proxy

import (
	"math/rand/v2"
	"net/url"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/pacehttp"
)

// MaxWait's estimate costs a request little however many calls the
// rules' windows hold: it copied and sorted every call of the longest
// window, and planned over all of them, for each request (-r
// 100/s,300000/h after an hour: 80 MB and 98 ms a request, so the proxy
// could not keep the pace its rules allow).
func TestMaxWaitEstimateDoesNotCopyTheHistory(t *testing.T) {
	rules, err := throttle.ParseRules("100/s,300000/h")
	if err != nil {
		t.Fatal(err)
	}
	lim, err := throttle.New(throttle.Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("http://127.0.0.1:1")
	p, err := New(Options{Upstream: u, Transport: pacehttp.New(lim, pacehttp.Options{Base: Base(NewUpstreamTransport(0, 0))}),
		MaxWait: 5 * time.Second, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range 300000 {
		p.remember(throttle.Admission{At: now.Add(-time.Hour + time.Duration(i)*12*time.Millisecond), Cost: 1})
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 5
	var d time.Duration
	for range n {
		d = p.estimate()
	}
	runtime.ReadMemStats(&after)
	if perCall := (after.TotalAlloc - before.TotalAlloc) / n; perCall > 1<<20 {
		t.Errorf("estimate allocates %d bytes a request over 300,000 calls, want well under 1 MiB", perCall)
	}
	if d < 0 || d > time.Hour {
		t.Errorf("estimate = %v, want a wait within the hour", d)
	}
}

// The estimate is the last instant of throttle.Plan's fastest FIFO
// schedule, for calls of cost 1 under count rules.
func TestLastAdmissionIsPlans(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Unix(1_000_000, 0)
	for trial := range 2000 {
		var rules []throttle.Rule
		for range 1 + rng.IntN(3) {
			rules = append(rules, throttle.Rule{N: 1 + rng.IntN(8), Window: time.Duration(1+rng.IntN(1000)) * time.Millisecond})
		}
		now := t0.Add(time.Duration(rng.IntN(2000)) * time.Millisecond)
		var past []throttle.Call
		at := t0
		for range rng.IntN(40) {
			at = at.Add(time.Duration(rng.IntN(100)) * time.Millisecond)
			past = append(past, throttle.Call{At: at, Cost: 1})
		}
		start := now.Add(time.Duration(rng.IntN(3)) * 300 * time.Millisecond) // a pause, or none
		k := 1 + rng.IntN(20)
		costs := make([]int, k)
		for i := range costs {
			costs[i] = 1
		}
		clamped := slices.Clone(past) // as the estimate counts them
		for i := range clamped {
			if clamped[i].At.After(now) {
				clamped[i].At = now
			}
		}
		plan := throttle.Plan(rules, clamped, costs, start, 0, 0)
		if got, want := lastAdmission(rules, past, k, start, now, make([]time.Time, k)), plan[k-1]; !got.Equal(want) {
			t.Fatalf("trial %d: lastAdmission(%v, %d past, %d, start+%v) = +%v, Plan's last = +%v",
				trial, rules, len(past), k, start.Sub(t0), got.Sub(t0), want.Sub(t0))
		}
	}
}
