package progress

import (
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/internal/summary"
	"github.com/pace-cli/pace/throttle"
)

func TestProgressRateUnit(t *testing.T) {
	for _, tt := range []struct {
		rules string
		want  string
	}{
		{"", "/s"},
		{"10/s", "/s"},
		{"1/s,1/h", "/s"}, // the fastest rule decides
		{"2/min", "/min"},
		{"59/h", "/h"},
		{"60/h", "/min"},
		{"5/2s", "/s"},
		{"cost:1000/s,2/min", "/min"}, // cost rules do not count calls
		{"cost:60/h", "/s"},           // nor decide the unit alone
	} {
		rules, err := throttle.ParseRules(tt.rules)
		if err != nil {
			t.Fatal(err)
		}
		if got := New(rules, 4).Unit(); got != tt.want {
			t.Errorf("New(%q) unit = %s, want %s", tt.rules, got, tt.want)
		}
	}
}

func TestProgressRate(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	p := New(nil, 1)
	for _, tt := range []struct {
		at   time.Duration
		done int64
		want float64
	}{
		{0, 0, 0},                         // one sample: no rate yet
		{200 * time.Millisecond, 2, 2},    // 2 in 200ms: over a second at least
		{2 * time.Second, 10, 5},          // 10 in 2s
		{10 * time.Second, 20, 2},         // 20 in 10s
		{12 * time.Second, 20, 10.0 / 10}, // the first sample has left the window: 10 in the last 10s
		{20 * time.Second, 20, 0},         // nothing in the last 10s
	} {
		if got := p.rate(t0.Add(tt.at), tt.done, throttle.Stats{}); got != tt.want {
			t.Errorf("rate(t0+%v, %d) = %v, want %v", tt.at, tt.done, got, tt.want)
		}
	}
}

func TestProgressText(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r5, r500 := throttle.Rule{N: 5, Window: time.Second}, throttle.Rule{N: 500, Window: time.Minute}
	stats := func(u5, u500 float64) throttle.Stats {
		return throttle.Stats{Rules: []throttle.RuleStats{{Rule: r5, Used: int(u5 * 5), Usage: u5}, {Rule: r500, Used: int(u500 * 500), Usage: u500}}}
	}
	paused := stats(0, 0)
	paused.PausedUntil = t0.Add(10*time.Second + 3*time.Second)
	for _, tt := range []struct {
		name  string
		done  int64
		tally summary.Snapshot
		st    throttle.Stats
		total int64
		want  string
	}{
		{"unknown total", 50, summary.Snapshot{}, stats(0.4, 0.1), -1, "50 done, 5.00/s, 5/s at 40%"},
		{"waiting on a rule", 50, summary.Snapshot{Failed: 3, ItemsStarted: 53}, stats(1, 0.1), 100, "50/100 done, 3 failed, 5.00/s, waiting on 5/s, ETA 9s"},
		{"busiest rule", 50, summary.Snapshot{ItemsStarted: 50}, stats(0.2, 0.96), 100, "50/100 done, 5.00/s, 500/m at 96%, ETA 9s"},
		{"paused by the server", 50, summary.Snapshot{ItemsStarted: 50}, paused, -1, "50 done, 5.00/s, paused by the server for 3s"},
		{"all done", 100, summary.Snapshot{ItemsStarted: 100}, throttle.Stats{}, 100, "100/100 done, 10.0/s"},
	} {
		p := New([]throttle.Rule{r5, r500}, 100)
		p.Text(t0, 0, summary.Snapshot{}, throttle.Stats{}, tt.total)
		if got := p.Text(t0.Add(10*time.Second), tt.done, tt.tally, tt.st, tt.total); got != tt.want {
			t.Errorf("%s: text = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestProgressETA checks the ETA: the fastest legal schedule for the
// items left after the admissions already made, plus a job's runtime.
func TestProgressETA(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	// past returns n admissions, the newest at now and then every d.
	past := func(n int, d time.Duration) []throttle.Call {
		var cs []throttle.Call
		for i := range n {
			cs = append(cs, throttle.Call{At: now.Add(-time.Duration(i) * d), Cost: 1})
		}
		return cs
	}
	burst := func(n int, ago time.Duration) []throttle.Call {
		cs := make([]throttle.Call, n)
		for i := range cs {
			cs[i] = throttle.Call{At: now.Add(-ago), Cost: 1}
		}
		return cs
	}
	for _, tt := range []struct {
		name  string
		rules string
		jobs  int
		left  int64
		t     summary.Snapshot
		want  time.Duration
	}{
		{name: "nothing left to start: the last jobs run", left: 0, jobs: 4, t: summary.Snapshot{P50: time.Second}, want: time.Second},
		{name: "no rules: rounds of jobs", left: 10, jobs: 4, t: summary.Snapshot{P50: time.Second}, want: 3 * time.Second},
		// 12/3s, 12 calls in the last 3s (one every 250ms): the calls to
		// come go as the old ones leave the window. The 18th waits for
		// the 6th new one to leave it: 1.5s + 3s.
		{name: "steady", rules: "12/3s", left: 18, jobs: 100, t: summary.Snapshot{Recent: past(12, 250*time.Millisecond)}, want: 4500 * time.Millisecond},
		// 10000/day spent an hour ago: the next call waits 23h.
		{name: "daily quota spent", rules: "10000/day", left: 1, jobs: 4, t: summary.Snapshot{Recent: burst(10000, time.Hour), P50: time.Second},
			want: 23*time.Hour + time.Second},
		{name: "room left", rules: "10/s", left: 5, jobs: 10, t: summary.Snapshot{Recent: past(2, time.Millisecond), P50: time.Second}, want: time.Second},
		// The slowest rule decides: 5/s, calls 16..20 in the 4th second.
		{name: "two rules", rules: "10/s,5/s", left: 20, jobs: 100, want: 3 * time.Second},
		// Costly calls: 10 calls of cost 5 under 20 per second, 4 a second.
		{name: "cost rule", rules: "cost:20/s", left: 10, jobs: 100, t: summary.Snapshot{MeanCost: 5}, want: 2 * time.Second},
		// Past 20000 items the simulation is scaled: 40000 jobs of 1ms
		// one at a time.
		{name: "scaled", left: 40000, jobs: 1, t: summary.Snapshot{P50: time.Millisecond}, want: 2*19999*time.Millisecond + time.Millisecond},
	} {
		rules, err := throttle.ParseRules(tt.rules)
		if err != nil {
			t.Fatal(err)
		}
		p := New(rules, tt.jobs)
		if got, ok := p.eta(now, tt.left, tt.t, time.Time{}); !ok || got != tt.want {
			t.Errorf("%s: eta = %v, %v; want %v", tt.name, got, ok, tt.want)
		}
	}
}

func TestProgressETAIsKeptForASecond(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	p := New(nil, 1)
	t1 := summary.Snapshot{P50: time.Second}
	if got, _ := p.eta(now, 10, t1, time.Time{}); got != 10*time.Second {
		t.Fatalf("eta = %v, want 10s", got)
	}
	// Within a second, with as many left, the same end: 400ms nearer.
	if got, _ := p.eta(now.Add(400*time.Millisecond), 10, summary.Snapshot{P50: time.Hour}, time.Time{}); got != 9600*time.Millisecond {
		t.Errorf("eta 400ms later = %v, want 9.6s (the same end)", got)
	}
	// Fewer left: computed again.
	if got, _ := p.eta(now.Add(400*time.Millisecond), 9, t1, time.Time{}); got != 9*time.Second {
		t.Errorf("eta with one fewer left = %v, want 9s", got)
	}
}

// The ETA counts what holds calls back beyond the user's rules: a
// server's pause, and the rules learned from the server.
func TestProgressETAPausesAndLearnedRules(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	r10, err := throttle.ParseRule("10/s")
	if err != nil {
		t.Fatal(err)
	}
	p := New([]throttle.Rule{r10}, 4)
	// 10 calls under 10/s: the last starts at once (0s, jobs take no time).
	if got, _ := p.eta(now, 10, summary.Snapshot{}, time.Time{}); got != 0 {
		t.Fatalf("eta = %v, want 0s", got)
	}
	p = New([]throttle.Rule{r10}, 4)
	if got, _ := p.eta(now, 10, summary.Snapshot{}, now.Add(time.Minute)); got != time.Minute {
		t.Errorf("eta while paused for a minute = %v, want 1m0s", got)
	}
	p = New([]throttle.Rule{r10}, 4)
	r1, _ := throttle.ParseRule("1/s")
	p.Extra = func() []throttle.Rule { return []throttle.Rule{r1} }
	if got, _ := p.eta(now, 10, summary.Snapshot{}, time.Time{}); got != 9*time.Second {
		t.Errorf("eta under a learned 1/s = %v, want 9s", got)
	}
}

// TestProgressRateNeverAboveARule: a burst the rules allow (two calls at
// once under 2/s, 100 in a second under 100/m) is not shown as a rate
// above them, read per second or per minute.
func TestProgressRateNeverAboveARule(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		rules string
		done  int64
		at    time.Duration
		want  string
	}{
		{"2/s", 2, 200 * time.Millisecond, "2.00/s"}, // 10.00/s before
		{"100/m", 100, 2 * time.Second, "1.67/s"},    // 100 in the minute, not 50/s
		{"10/s,500/m", 50, 10 * time.Second, "5.00/s"},
	} {
		rules, err := throttle.ParseRules(tt.rules)
		if err != nil {
			t.Fatal(err)
		}
		st := throttle.Stats{}
		for _, r := range rules {
			st.Rules = append(st.Rules, throttle.RuleStats{Rule: r, Used: int(min(tt.done, int64(r.N)))})
		}
		p := New(rules, 4)
		p.rate(t0, 0, throttle.Stats{})
		if got := human.Rate(p.rate(t0.Add(tt.at), tt.done, st)) + p.Unit(); got != tt.want {
			t.Errorf("%s, %d done after %v: rate %s, want %s", tt.rules, tt.done, tt.at, got, tt.want)
		}
	}
}

// A proxy's status says how many requests wait for their admission.
func TestProgressTextWaiting(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	p := New(nil, 4)
	p.Waiting = func() int64 { return 3 }
	if got, want := p.Text(t0, 5, summary.Snapshot{}, throttle.Stats{}, -1), "5 done, 3 waiting, 0.00/s"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
}

// TestFit: parts are dropped, highest Drop first, before the bar gets
// under MinBarCells; then the bar narrows, then the text is cut.
func TestFit(t *testing.T) {
	parts := []Part{{Text: "120/1000 done"}, {Text: "3 failed", Drop: 1}, {Text: "4.90/s", Drop: 4}, {Text: "waiting on 5/s", Drop: 3}}
	for _, tt := range []struct {
		room, overhead int
		bar            bool
		text           string
		cells          int
		ok             bool
	}{
		{200, 11, true, "120/1000 done, 3 failed, 4.90/s, waiting on 5/s", MaxBarCells, true},
		{60, 11, true, "120/1000 done, 3 failed, waiting on 5/s", 10, true},
		{40, 11, true, "120/1000 done", 16, true},
		{30, 11, true, "120/1000 done", 6, true},
		{20, 11, true, "120/1000…", 0, true},
		{11, 11, true, "", 0, false},
		{30, 4, false, "120/1000 done, 3 failed", 0, true},
	} {
		text, cells, ok := Fit(parts, tt.room, tt.overhead, tt.bar)
		if text != tt.text || cells != tt.cells || ok != tt.ok {
			t.Errorf("Fit(room %d, overhead %d, bar %v) = %q, %d, %v; want %q, %d, %v", tt.room, tt.overhead, tt.bar, text, cells, ok, tt.text, tt.cells, tt.ok)
		}
	}
}

// TestProgressETAAfterResume: the calls of an earlier run (a job log's,
// seeded into the tally) still fill the rule's window, and the ETA waits
// for them to leave it, as the backend does; it was "ETA 9s" for 100
// items under 100/m with the minute spent.
func TestProgressETAAfterResume(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	rules, err := throttle.ParseRules("100/m")
	if err != nil {
		t.Fatal(err)
	}
	tl := summary.NewTally(rules)
	earlier := make([]throttle.Call, 100)
	for i := range earlier {
		earlier[i] = throttle.Call{At: now.Add(-10*time.Second - time.Duration(i)*time.Millisecond), Cost: 1}
	}
	tl.Seed(earlier)
	p := New(rules, 4)
	if got := p.Text(now, 0, tl.Snapshot(), throttle.Stats{}, 100); !strings.HasSuffix(got, ", ETA 50s") {
		t.Errorf("status with the minute spent 10s ago = %q, want ETA 50s (the earlier calls leave the window)", got)
	}
	// Ten seconds later, with nothing started, the ETA has gone down by as much.
	if got := p.Text(now.Add(10*time.Second), 0, tl.Snapshot(), throttle.Stats{}, 100); !strings.HasSuffix(got, ", ETA 40s") {
		t.Errorf("status 10s later = %q, want ETA 40s", got)
	}
}
