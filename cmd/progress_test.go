package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// writeLog records every Write as one entry, so that a test can tell one
// write from two.
type writeLog struct {
	mu     sync.Mutex
	writes []string
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func (w *writeLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws := w.writes
	w.writes = nil
	return ws
}

func TestNewDisplayMode(t *testing.T) {
	for _, tt := range []struct {
		mode string
		tty  bool
		want string
	}{
		{progressAuto, true, progressAlways},
		{progressAuto, false, progressLines},
		{progressAlways, false, progressAlways},
		{progressLines, true, progressLines},
		{progressNever, true, progressNever},
	} {
		ios, _, _, _ := Test()
		ios.SetStderrTTY(tt.tty)
		if got := newDisplay(ios, tt.mode, time.Second).mode; got != tt.want {
			t.Errorf("newDisplay(--progress %s, stderr tty %v).mode = %s, want %s", tt.mode, tt.tty, got, tt.want)
		}
	}
	ios, _, _, _ := Test()
	if d := newDisplay(ios, progressLines, time.Millisecond); d.interval != minProgressInterval {
		t.Errorf("newDisplay(interval 1ms).interval = %v, want the minimum %v", d.interval, minProgressInterval)
	}
}

// TestDisplayBar checks how the bar is drawn: each draw is one write,
// "\r" and the text, padded to cover a longer bar before; it is erased
// only before other output, and drawn again right after it.
func TestDisplayBar(t *testing.T) {
	w := &writeLog{}
	d := &display{w: w, mode: progressAlways}
	draw := func(s string) {
		d.mu.Lock()
		d.drawLocked(s)
		d.mu.Unlock()
	}
	check := func(step string, want ...string) {
		t.Helper()
		if got := w.take(); !slices.Equal(got, want) {
			t.Errorf("%s: writes %q, want %q", step, got, want)
		}
	}
	draw("[█·] 1/2 done, 5.00/s")
	check("first draw", "\r[█·] 1/2 done, 5.00/s")
	draw("[██] 2/2 done")
	check("shorter draw", "\r[██] 2/2 done        ")
	draw("[██] 2/2 done, longer than both")
	check("longer draw", "\r[██] 2/2 done, longer than both")

	d.write(func() { w.Write([]byte("job output\n")) })
	check("output", "\r"+strings.Repeat(" ", 31)+"\r", "job output\n", "\r[██] 2/2 done, longer than both")
	dw := displayWriter{d, w}
	fmt.Fprintf(dw, "pace: a warning\n")
	check("warning", "\r"+strings.Repeat(" ", 31)+"\r", "pace: a warning\n", "\r[██] 2/2 done, longer than both")

	d.close()
	check("close", "\r"+strings.Repeat(" ", 31)+"\r")
	draw("[██] too late")
	d.write(func() { w.Write([]byte("summary\n")) })
	check("after close", "summary\n")
}

func TestDisplayWithoutBar(t *testing.T) {
	for _, mode := range []string{progressLines, progressNever} {
		w := &writeLog{}
		d := &display{w: w, mode: mode}
		d.mu.Lock()
		d.drawLocked("[··] 0 done")
		d.mu.Unlock()
		d.write(func() { w.Write([]byte("job output\n")) })
		d.close()
		if got, want := w.take(), []string{"job output\n"}; !slices.Equal(got, want) {
			t.Errorf("--progress %s: writes %q, want only %q", mode, got, want)
		}
	}
}

func TestProgressBar(t *testing.T) {
	p := newProgress(nil, 1)
	for _, tt := range []struct {
		done, total int64
		want        string
	}{
		{0, -1, "[····················]"},
		{0, 10, "[····················]"},
		{5, 10, "[██████████··········]"},
		{10, 10, "[████████████████████]"},
		{12, 10, "[████████████████████]"},
		{1, 3, "[██████··············]"},
	} {
		if got := p.bar(tt.done, tt.total); got != tt.want {
			t.Errorf("bar(%d, %d) = %q, want %q", tt.done, tt.total, got, tt.want)
		}
	}
}

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
		if got := newProgress(rules, 4).unitStr; got != tt.want {
			t.Errorf("newProgress(%q) unit = %s, want %s", tt.rules, got, tt.want)
		}
	}
}

func TestProgressRate(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgress(nil, 1)
	for _, tt := range []struct {
		at   time.Duration
		done int64
		want float64
	}{
		{0, 0, 0},                         // one sample: no rate yet
		{2 * time.Second, 10, 5},          // 10 in 2s
		{10 * time.Second, 20, 2},         // 20 in 10s
		{12 * time.Second, 20, 10.0 / 10}, // the first sample has left the window: 10 in the last 10s
		{20 * time.Second, 20, 0},         // nothing in the last 10s
	} {
		if got := p.rate(t0.Add(tt.at), tt.done); got != tt.want {
			t.Errorf("rate(t0+%v, %d) = %v, want %v", tt.at, tt.done, got, tt.want)
		}
	}
}

func TestProgressText(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r5, r500 := throttle.Rule{N: 5, Window: time.Second}, throttle.Rule{N: 500, Window: time.Minute}
	stats := func(u5, u500 float64) throttle.Stats {
		return throttle.Stats{Rules: []throttle.RuleStats{{Rule: r5, Usage: u5}, {Rule: r500, Usage: u500}}}
	}
	paused := stats(0, 0)
	paused.PausedUntil = t0.Add(10*time.Second + 3*time.Second)
	for _, tt := range []struct {
		name  string
		done  int64
		tally tallySnapshot
		st    throttle.Stats
		total int64
		want  string
	}{
		{"unknown total", 50, tallySnapshot{}, stats(0.4, 0.1), -1, "50 done, 5.00/s, 5/s at 40%"},
		{"waiting on a rule", 50, tallySnapshot{Failed: 3, ItemsStarted: 53}, stats(1, 0.1), 100, "50/100 done, 3 failed, 5.00/s, waiting on 5/s, ETA 9s"},
		{"busiest rule", 50, tallySnapshot{ItemsStarted: 50}, stats(0.2, 0.96), 100, "50/100 done, 5.00/s, 500/m at 96%, ETA 9s"},
		{"paused by the server", 50, tallySnapshot{ItemsStarted: 50}, paused, -1, "50 done, 5.00/s, paused by the server for 3s"},
		{"all done", 100, tallySnapshot{ItemsStarted: 100}, throttle.Stats{}, 100, "100/100 done, 10.0/s"},
	} {
		p := newProgress([]throttle.Rule{r5, r500}, 100)
		p.text(t0, 0, tallySnapshot{}, throttle.Stats{}, tt.total)
		if got := p.text(t0.Add(10*time.Second), tt.done, tt.tally, tt.st, tt.total); got != tt.want {
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
		t     tallySnapshot
		want  time.Duration
	}{
		{name: "nothing left to start: the last jobs run", left: 0, jobs: 4, t: tallySnapshot{P50: time.Second}, want: time.Second},
		{name: "no rules: rounds of jobs", left: 10, jobs: 4, t: tallySnapshot{P50: time.Second}, want: 3 * time.Second},
		// 12/3s, 12 calls in the last 3s (one every 250ms): the calls to
		// come go as the old ones leave the window. The 18th waits for
		// the 6th new one to leave it: 1.5s + 3s.
		{name: "steady", rules: "12/3s", left: 18, jobs: 100, t: tallySnapshot{Recent: past(12, 250*time.Millisecond)}, want: 4500 * time.Millisecond},
		// 10000/day spent an hour ago: the next call waits 23h.
		{name: "daily quota spent", rules: "10000/day", left: 1, jobs: 4, t: tallySnapshot{Recent: burst(10000, time.Hour), P50: time.Second},
			want: 23*time.Hour + time.Second},
		{name: "room left", rules: "10/s", left: 5, jobs: 10, t: tallySnapshot{Recent: past(2, time.Millisecond), P50: time.Second}, want: time.Second},
		// The slowest rule decides: 5/s, calls 16..20 in the 4th second.
		{name: "two rules", rules: "10/s,5/s", left: 20, jobs: 100, want: 3 * time.Second},
		// Costly calls: 10 calls of cost 5 under 20 per second, 4 a second.
		{name: "cost rule", rules: "cost:20/s", left: 10, jobs: 100, t: tallySnapshot{MeanCost: 5}, want: 2 * time.Second},
		// Past 20000 items the simulation is scaled: 40000 jobs of 1ms
		// one at a time.
		{name: "scaled", left: 40000, jobs: 1, t: tallySnapshot{P50: time.Millisecond}, want: 2*19999*time.Millisecond + time.Millisecond},
	} {
		rules, err := throttle.ParseRules(tt.rules)
		if err != nil {
			t.Fatal(err)
		}
		p := newProgress(rules, tt.jobs)
		if got, ok := p.eta(now, tt.left, tt.t, time.Time{}); !ok || got != tt.want {
			t.Errorf("%s: eta = %v, %v; want %v", tt.name, got, ok, tt.want)
		}
	}
}

func TestProgressETAIsKeptForASecond(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	p := newProgress(nil, 1)
	t1 := tallySnapshot{P50: time.Second}
	if got, _ := p.eta(now, 10, t1, time.Time{}); got != 10*time.Second {
		t.Fatalf("eta = %v, want 10s", got)
	}
	// Within a second, with as many left, the same end: 400ms nearer.
	if got, _ := p.eta(now.Add(400*time.Millisecond), 10, tallySnapshot{P50: time.Hour}, time.Time{}); got != 9600*time.Millisecond {
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
	p := newProgress([]throttle.Rule{r10}, 4)
	// 10 calls under 10/s: the last starts at once (0s, jobs take no time).
	if got, _ := p.eta(now, 10, tallySnapshot{}, time.Time{}); got != 0 {
		t.Fatalf("eta = %v, want 0s", got)
	}
	p = newProgress([]throttle.Rule{r10}, 4)
	if got, _ := p.eta(now, 10, tallySnapshot{}, now.Add(time.Minute)); got != time.Minute {
		t.Errorf("eta while paused for a minute = %v, want 1m0s", got)
	}
	p = newProgress([]throttle.Rule{r10}, 4)
	r1, _ := throttle.ParseRule("1/s")
	p.extra = func() []throttle.Rule { return []throttle.Rule{r1} }
	if got, _ := p.eta(now, 10, tallySnapshot{}, time.Time{}); got != 9*time.Second {
		t.Errorf("eta under a learned 1/s = %v, want 9s", got)
	}
}

func TestRoundETA(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{1400 * time.Millisecond, "1s"},
		{3*time.Minute + 20*time.Second + 500*time.Millisecond, "3m21s"},
		{2*time.Hour + 10*time.Minute + 31*time.Second, "2h11m0s"},
	} {
		if got := roundETA(tt.d); got != tt.want {
			t.Errorf("roundETA(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// itemsFile writes n items to a file and returns its name: a regular file
// input, whose items pace counts for the total.
func itemsFile(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	name := filepath.Join(t.TempDir(), "items")
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestProgressLines runs a session longer than --progress-interval with
// stderr not a terminal: status lines on their own lines, one per interval.
func TestProgressLines(t *testing.T) {
	for _, mode := range []string{progressAuto, progressLines} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// 2 per 1.3s, 30ms jobs: admissions at 0, 30ms, 1.3s,
				// 1.33s, ...; no tick (every 1s) comes at the instant of
				// an admission or of a job's end.
				o := testOptions(t, 1, "2/1300ms")
				o.Progress, o.ProgressInterval, o.Summary = mode, time.Second, summaryNone
				o.Input = itemsFile(t, 10)
				ts := newTestSession(t, "", o, &fakeExec{took: 30 * time.Millisecond})
				if code := ts.run(); code != ExitOK {
					t.Fatalf("run = exit %d\n%s", code, ts.errOut)
				}
				stderr := ts.errOut.String()
				if strings.ContainsAny(stderr, "\r\x1b") {
					t.Errorf("status lines hold carriage returns or escape sequences: %q", stderr)
				}
				lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
				// The last admission is at 5.23s: the run takes 5.26s, 5
				// ticks.
				want := []string{
					"pace: 2/10 done, 2.00/s, waiting on 2/1s300ms, ETA 4s",
					"pace: 4/10 done, 2.00/s, waiting on 2/1s300ms, ETA 3s",
					"pace: 6/10 done, 2.00/s, waiting on 2/1s300ms, ETA 2s",
					"pace: 8/10 done, 2.00/s, waiting on 2/1s300ms, ETA 1s",
					"pace: 8/10 done, 1.60/s, waiting on 2/1s300ms, ETA 0s",
				}
				if !slices.Equal(lines, want) {
					t.Errorf("status lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
				}
			})
		})
	}
}

// TestProgressBarOnTerminal runs a session with stderr a terminal: the bar
// is drawn in place, with the total counted from the input file, and
// erased before the summary.
func TestProgressBarOnTerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testOptions(t, 1, "4/s")
		o.Progress = progressAuto
		o.Input = itemsFile(t, 8)
		ts := newTestSession(t, "", o, &fakeExec{took: 10 * time.Millisecond})
		ts.s.f.IOStreams.SetStderrTTY(true)
		if code := ts.run(); code != ExitOK {
			t.Fatalf("run = exit %d\n%s", code, ts.errOut)
		}
		stderr := ts.errOut.String()
		bar, summary, ok := strings.Cut(stderr, "\rpace: 8 ok")
		if !ok {
			t.Fatalf("stderr = %q, want the bar, erased, then the summary", stderr)
		}
		if strings.Contains(summary, "\r") || strings.Contains(bar, "\n") {
			t.Errorf("stderr = %q, want the bar on one line, redrawn in place, and nothing of it after the summary", stderr)
		}
		// Every piece between carriage returns is a bar, or spaces that
		// erase it: once before each of the 8 jobs' output (on stdout,
		// the same terminal) and once for good before the summary.
		re := regexp.MustCompile(`^\[[█·]{20}\] \d+(/8)? done(, .*)? *$`)
		erased := 0
		for _, piece := range strings.Split(bar, "\r")[1:] {
			switch {
			case piece == "":
			case strings.TrimLeft(piece, " ") == "":
				erased++
			case !re.MatchString(piece):
				t.Errorf("bar %q does not match %s", piece, re)
			}
		}
		if erased != 9 {
			t.Errorf("bar erased %d times, want 9 (before each job's output, and at the end): %q", erased, bar)
		}
		// An erase is followed at once by the bar drawn again, or by the
		// summary: never a blank line between draws.
		if n := len(regexp.MustCompile(`\r +(\r\r\[|$)`).FindAllString(bar, -1)); n != erased {
			t.Errorf("%d of %d erases followed by a redraw or the summary: %q", n, erased, bar)
		}
		for _, want := range []string{
			"\r[····················] 0 done",
			"\r[██████████··········] 4/8 done, 20.0/s, waiting on 4/s, ETA 1s",
		} {
			if !strings.Contains(bar, want) {
				t.Errorf("bar %q lacks %q", bar, want)
			}
		}
	})
}

func TestTotal(t *testing.T) {
	tot := newTotal()
	if got := tot.get(); got != -1 {
		t.Errorf("newTotal().get() = %d, want -1 (unknown)", got)
	}
	tot.set(42)
	if got := tot.get(); got != 42 {
		t.Errorf("get() after set(42) = %d", got)
	}
}
