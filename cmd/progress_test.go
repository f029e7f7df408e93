package cmd

import (
	"fmt"
	"github.com/pace-cli/pace/internal/human"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

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

// testDisplay returns a display with a bar on a screen cols wide.
func testDisplay(cols int) (*display, *screen) {
	scr := newScreen(cols)
	d := &display{w: scr, mode: progressAlways, width: func() int { return cols }, outOnScreen: true, bar: newTermBar(scr)}
	return d, scr
}

// setStatus draws the bar with done of total and the parts after the
// count.
func (d *display) setStatus(done, total int64, parts ...statusPart) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.done = done
	d.status = barStatus{total: total, parts: parts, ready: true}
	d.drawLocked()
}

// TestDisplayKeepsOutput checks what the screen shows as output and the
// bar alternate: output is never drawn over, output without a final
// newline stays whole with the bar on the line below, and the bar is gone
// once the display is closed, the summary on a line of its own.
func TestDisplayKeepsOutput(t *testing.T) {
	d, scr := testDisplay(40)
	check := func(step string, want ...string) {
		t.Helper()
		if got := scr.text(); !slices.Equal(got, want) {
			t.Errorf("%s: screen\n%q\nwant\n%q", step, got, want)
		}
	}
	d.setStatus(1, 4, statusPart{"waiting on 2/s", 3})
	// 40 columns: the rule is dropped rather than the bar made narrow.
	check("first draw", "  25% [█████···············]  1/4 done")
	d.setStatus(2, 4)
	check("redraw", "  50% [██████████··········]  2/4 done")

	out := d.screen(&bytesWriter{scr}, true)
	d.write(func() { out.Write([]byte(`{"id":1}`)) })
	check("output without a newline", `{"id":1}`, "  50% [██████████··········]  2/4 done")
	d.write(func() { out.Write([]byte(`{"id":2}`)) })
	check("more output", `{"id":1}`, `{"id":2}`, "  50% [██████████··········]  2/4 done")
	d.write(func() { out.Write([]byte("line\n")) })
	check("a whole line", `{"id":1}`, `{"id":2}`, "line", "  50% [██████████··········]  2/4 done")
	dw := displayWriter{d, scr}
	fmt.Fprintf(dw, "pace: a warning\n")
	check("a warning", `{"id":1}`, `{"id":2}`, "line", "pace: a warning", "  50% [██████████··········]  2/4 done")
	d.write(func() { out.Write([]byte("last")) })
	d.close()
	scr.Write([]byte("pace: summary\n"))
	check("close", `{"id":1}`, `{"id":2}`, "line", "pace: a warning", "last", "pace: summary")
	d.setStatus(3, 4)
	check("after close", `{"id":1}`, `{"id":2}`, "line", "pace: a warning", "last", "pace: summary")
	if scr.wraps > 0 || len(scr.errs) > 0 {
		t.Errorf("screen: %d wraps, errors %q", scr.wraps, scr.errs)
	}
}

// bytesWriter hides a writer's type, as a file would be hidden.
type bytesWriter struct{ w *screen }

func (b *bytesWriter) Write(p []byte) (int, error) { return b.w.Write(p) }

// TestDisplayUnknownTotal: a spinner while the total is unknown, then a
// bar from the count when it becomes known (progressbar/v3's own count
// would have wrapped modulo the bar's width).
func TestDisplayUnknownTotal(t *testing.T) {
	d, scr := testDisplay(80)
	for i := range int64(45) {
		d.setStatus(i, -1)
	}
	if got := scr.text(); len(got) != 1 || !regexp.MustCompile(`^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]  44 done$`).MatchString(got[0]) {
		t.Errorf("spinner: screen %q, want one line, a spinner and 44 done", got)
	}
	d.setStatus(45, 90)
	if got, want := scr.text(), []string{"  50% [" + strings.Repeat("█", 20) + strings.Repeat("·", 20) + "]  45/90 done"}; !slices.Equal(got, want) {
		t.Errorf("once the total is known: screen %q, want %q", got, want)
	}
}

// TestDisplayFitsTheWidth: at any width the bar's line leaves the last
// column free; parts are dropped, rate first, before the bar gets under
// ten cells, and the count is cut last.
func TestDisplayFitsTheWidth(t *testing.T) {
	parts := []statusPart{{"3 failed", 1}, {"4.90/s", 4}, {"waiting on 5/s", 3}, {"ETA 3m20s", 2}}
	for _, tt := range []struct {
		cols  int
		total int64
		want  string
	}{
		{200, 1000, "  12% [████····································]  120/1000 done, 3 failed, 4.90/s, waiting on 5/s, ETA 3m20s"},
		{80, 1000, "  12% [█·········]  120/1000 done, 3 failed, 4.90/s, waiting on 5/s, ETA 3m20s"},
		{60, 1000, "  12% [█·············]  120/1000 done, 3 failed, ETA 3m20s"},
		{40, 1000, "  12% [█··············]  120/1000 done"},
		{25, 1000, "  12% []  120/1000 done"},
		{24, 1000, "  12% []  120/1000 do…"},
		{20, 1000, "  12% []  120/100…"},
		{40, -1, "⠋  120 done, 3 failed, ETA 3m20s"},
		{10, -1, "⠋  120 …"},
	} {
		d, scr := testDisplay(tt.cols)
		d.setStatus(120, tt.total, parts...)
		got := scr.text()
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("%d columns, total %d: screen %q, want %q", tt.cols, tt.total, got, tt.want)
		}
		if len(got) == 1 && utf8.RuneCountInString(got[0]) > tt.cols-1 {
			t.Errorf("%d columns: line %q is %d wide", tt.cols, got[0], utf8.RuneCountInString(got[0]))
		}
	}
}

func TestDisplayWithoutBar(t *testing.T) {
	for _, mode := range []string{progressLines, progressNever} {
		w := &writeLog{}
		d := &display{w: w, mode: mode}
		d.setStatus(0, 2)
		d.write(func() { d.screen(w, true).Write([]byte("job output")) })
		d.close()
		if got, want := w.take(), []string{"job output"}; !slices.Equal(got, want) {
			t.Errorf("--progress %s: writes %q, want only %q", mode, got, want)
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
					// The rate is 2 calls in the rule's 1.3s, not 2 in the
					// last second: never above the rule.
					"pace: 2/10 done, 1.54/s, waiting on 2/1s300ms, ETA 4s",
					"pace: 4/10 done, 1.54/s, waiting on 2/1s300ms, ETA 3s",
					"pace: 6/10 done, 1.54/s, waiting on 2/1s300ms, ETA 2s",
					"pace: 8/10 done, 1.54/s, waiting on 2/1s300ms, ETA 1s",
					"pace: 8/10 done, 1.54/s, waiting on 2/1s300ms, ETA 0s",
				}
				if !slices.Equal(lines, want) {
					t.Errorf("status lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
				}
			})
		})
	}
}

// TestProgressBarOnTerminal runs a session with stderr a terminal: the bar
// is drawn in place, with the total counted from the input file, its rate
// never above the rule, and it is gone before the summary.
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
		raw := ts.errOut.String()
		scr := newScreen(80)
		scr.Write([]byte(raw))
		lines := scr.text()
		if len(lines) == 0 || !strings.HasPrefix(lines[0], "pace: 8 ok") || scr.wraps > 0 || len(scr.errs) > 0 {
			t.Errorf("screen after the run:\n%s\nwant the summary alone (wraps %d, errors %q)", strings.Join(lines, "\n"), scr.wraps, scr.errs)
		}
		if want := regexp.MustCompile(`\r  50% \[█{14}·{14}\]  4/8 done, 4\.00/s, waiting on 4/s, ETA 1s \x1b\[0K`); !want.MatchString(raw) {
			t.Errorf("stderr %q lacks a bar matching %s", raw, want)
		}
		for _, m := range regexp.MustCompile(`([0-9.]+)/s,`).FindAllStringSubmatch(raw, -1) {
			if r, _ := strconv.ParseFloat(m[1], 64); r > 4 {
				t.Errorf("the bar shows %s/s under 4/s", m[1])
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
	tl := newTally(rules)
	earlier := make([]throttle.Call, 100)
	for i := range earlier {
		earlier[i] = throttle.Call{At: now.Add(-10*time.Second - time.Duration(i)*time.Millisecond), Cost: 1}
	}
	tl.seed(earlier)
	p := newProgress(rules, 4)
	if got, _ := p.eta(now, 100, tl.snapshot(), time.Time{}); got != 50*time.Second {
		t.Errorf("eta with the minute spent 10s ago = %v, want 50s (the earlier calls leave the window)", got)
	}
	// Ten seconds later, with nothing started, the ETA has gone down by as much.
	if got, _ := p.eta(now.Add(10*time.Second), 100, tl.snapshot(), time.Time{}); got != 40*time.Second {
		t.Errorf("eta 10s later = %v, want 40s", got)
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
		p := newProgress(rules, 4)
		p.rate(t0, 0, throttle.Stats{})
		if got := human.Rate(p.rate(t0.Add(tt.at), tt.done, st)) + p.unitStr; got != tt.want {
			t.Errorf("%s, %d done after %v: rate %s, want %s", tt.rules, tt.done, tt.at, got, tt.want)
		}
	}
}

// TestProgressPipedTotal: items from a pipe have no total until the input
// ends; then the status shows it (it showed "2 done" to the end before).
func TestProgressPipedTotal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 4 items under 2/1.3s, jobs of 2.5s, 4 at once: the pool takes
		// the last item at 1.3s and the input ends then; the jobs end at
		// 2.5s and 3.8s.
		o := testOptions(t, 4, "2/1300ms")
		o.Progress, o.ProgressInterval, o.Summary = progressLines, time.Second, summaryNone
		ts := newTestSession(t, "a\nb\nc\nd\n", o, &fakeExec{took: 2500 * time.Millisecond})
		if code := ts.run(); code != ExitOK {
			t.Fatalf("run = exit %d\n%s", code, ts.errOut)
		}
		lines := strings.Split(strings.TrimSuffix(ts.errOut.String(), "\n"), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "pace: 0 done, ") || !strings.HasPrefix(lines[1], "pace: 0/4 done, ") || !strings.HasPrefix(lines[2], "pace: 2/4 done, ") {
			t.Errorf("status lines %q, want 0 done at 1s, then 0/4 and 2/4: the total known at the input's end", lines)
		}
	})
}
