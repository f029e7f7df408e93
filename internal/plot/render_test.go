package plot

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// render renders a picture, failing the test on error.
func render(t *testing.T, rules []Rule, calls []Call, pauses []Pause, opts Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, rules, calls, pauses, opts); err != nil {
		t.Fatalf("Render: %v", err)
	}
	return buf.Bytes()
}

const seedTitle = "seed run: 30 calls at 5/s and 12/3s"

// TestGolden compares the picture of the seed run with
// testdata/seed.svg, byte for byte. Run go test -update to rewrite it
// after an intended change, and look at the result in a browser.
func TestGolden(t *testing.T) {
	got := render(t, seedRules, seedCalls(), seedPauses, Options{Title: seedTitle})
	golden := filepath.Join("testdata", "seed.svg")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Render(seed run) differs from %s; if the change is intended, run go test -update and check the picture", golden)
	}
}

// TestSeedStructure reads the picture of the seed run as XML and checks
// each part of it.
func TestSeedStructure(t *testing.T) {
	calls := seedCalls()
	root := parseSVG(t, render(t, seedRules, calls, seedPauses, Options{Title: seedTitle}))

	if w, h := root.attr("width"), root.attr("height"); w != "1000" || h != "600" {
		t.Errorf("size = %s×%s, want the default 1000×600", w, h)
	}
	if got := root.one(t, "title").text(); got != seedTitle {
		t.Errorf("title = %q, want %q", got, seedTitle)
	}

	// One group per rule, with its label, its 100% line and a peak of
	// exactly 1: the greedy schedule fills both rules and breaks neither.
	groups := root.find("rule")
	if len(groups) != len(seedRules) {
		t.Fatalf("%d rule groups, want %d", len(groups), len(seedRules))
	}
	for i, g := range groups {
		label := seedRules[i].Label
		if got := g.attr("data-rule"); got != label {
			t.Errorf("rule group %d: data-rule = %q, want %q", i, got, label)
		}
		if got := g.one(t, "rule-label").text(); got != label {
			t.Errorf("rule %s: label = %q", label, got)
		}
		if got := g.attr("data-peak"); got != "1" {
			t.Errorf("rule %s: data-peak = %q, want 1", label, got)
		}
		limitY := g.one(t, "limit-100").num(t, "y1")
		if top := slices.Min(pathYs(t, g.one(t, "occupancy").attr("d"))); top != limitY {
			t.Errorf("rule %s: occupancy reaches y = %v, want exactly the 100%% line at y = %v", label, top, limitY)
		}
		if n := len(g.find("breach")); n != 0 {
			t.Errorf("rule %s: %d breach marks on a legal run", label, n)
		}
		if !strings.Contains(g.one(t, "peak").text(), "(100%)") {
			t.Errorf("rule %s: peak text %q does not say 100%%", label, g.one(t, "peak").text())
		}
	}

	// The time axis is labelled in seconds from the first call.
	axis := root.one(t, "axis-x")
	var labels []string
	for _, l := range axis.find("tick-label") {
		labels = append(labels, l.text())
	}
	if want := []string{"0", "1s", "2s", "3s", "4s", "5s", "6s", "7s"}; !slices.Equal(labels, want) {
		t.Errorf("tick labels = %q, want %q", labels, want)
	}
	if got := axis.one(t, "axis-title").text(); !strings.HasPrefix(got, "time since the first call (2023-11-14 22:13:20.000 UTC)") {
		t.Errorf("axis title = %q", got)
	}

	// One tick per call, in the colour of its outcome.
	cg := root.one(t, "calls")
	if got := cg.attr("data-mode"); got != "ticks" {
		t.Fatalf("calls data-mode = %q, want ticks for 30 calls", got)
	}
	if n := len(cg.find("call")); n != len(calls) {
		t.Errorf("%d call ticks, want %d", n, len(calls))
	}
	want := map[string]int{"ok": 27, "failed": 1, "retried": 1, "refused": 1}
	for _, g := range cg.find("outcome") {
		o := g.attr("data-outcome")
		if n := len(g.find("call")); n != want[o] {
			t.Errorf("%d %s ticks, want %d", n, o, want[o])
		}
		delete(want, o)
	}
	if len(want) > 0 {
		t.Errorf("no tick group for outcomes %v", want)
	}
	for _, key := range []string{"ok", "failed", "retried", "refused", "pause", "limit"} {
		found := false
		for _, item := range root.one(t, "legend").find("legend-item") {
			found = found || item.attr("data-key") == key
		}
		if !found {
			t.Errorf("legend has no item %q", key)
		}
	}

	// The pause is one band from 1.3s to 1.9s.
	bands := root.one(t, "pauses").find("pause")
	if len(bands) != 1 {
		t.Fatalf("%d pause bands, want 1", len(bands))
	}
	span := time.Duration(0)
	for _, c := range calls {
		span = max(span, c.Start.Add(c.Runtime).Sub(t0))
	}
	const left, plotW = 56, 920
	wantX := left + plotW*1.3*float64(time.Second)/float64(span)
	wantW := plotW * 0.6 * float64(time.Second) / float64(span)
	if x, w := bands[0].num(t, "x"), bands[0].num(t, "width"); abs(x-wantX) > 0.1 || abs(w-wantW) > 0.15 {
		t.Errorf("pause band x = %v, width = %v, want %.1f, %.1f", x, w, wantX, wantW)
	}

	// In flight: the peak is the brute-force maximum.
	ig := root.one(t, "inflight")
	ig.one(t, "inflight-area")
	if got, want := ig.attr("data-peak"), bruteInflightPeak(calls); got != want {
		t.Errorf("in-flight data-peak = %s, want %s", got, want)
	}
}

func abs(x float64) float64 { return max(x, -x) }

// bruteInflightPeak returns the most calls in flight at any start.
func bruteInflightPeak(calls []Call) string {
	peak := 0
	for _, c := range calls {
		n := 0
		for _, d := range calls {
			if !d.Start.After(c.Start) && d.Start.Add(d.Runtime).After(c.Start) {
				n++
			}
		}
		peak = max(peak, n)
	}
	return strconv.Itoa(peak)
}

// TestBreachShows checks that a run that breaks a rule draws that rule's
// occupancy above its 100% line, marks the breach and says so, while the
// rule it keeps stays at or under its line.
func TestBreachShows(t *testing.T) {
	calls := seedCalls()
	calls = append(calls, Call{Start: t0.Add(6 * time.Second)}) // a sixth call in 1s: breaks 5/s
	rules := []Rule{seedRules[0], {N: 13, Window: 3 * time.Second, Label: "13/3s"}}
	root := parseSVG(t, render(t, rules, calls, nil, Options{}))
	groups := root.find("rule")
	if len(groups) != 2 {
		t.Fatalf("%d rule groups, want 2", len(groups))
	}

	broken := groups[0]
	limitY := broken.one(t, "limit-100").num(t, "y1")
	if top := slices.Min(pathYs(t, broken.one(t, "occupancy").attr("d"))); top >= limitY {
		t.Errorf("5/s: occupancy reaches y = %v, want above the 100%% line at y = %v", top, limitY)
	}
	if got := broken.attr("data-peak"); got != "1.2" {
		t.Errorf("5/s: data-peak = %q, want 1.2", got)
	}
	broken.one(t, "breach")
	if got := broken.one(t, "peak").text(); got != "peak 6 of 5 calls (120%), over the limit" {
		t.Errorf("5/s: peak text = %q", got)
	}

	kept := groups[1]
	limitY = kept.one(t, "limit-100").num(t, "y1")
	if top := slices.Min(pathYs(t, kept.one(t, "occupancy").attr("d"))); top != limitY {
		t.Errorf("13/3s: occupancy reaches y = %v, want exactly the 100%% line at y = %v", top, limitY)
	}
	if n := len(kept.find("breach")); n != 0 {
		t.Errorf("13/3s: %d breach marks, want none", n)
	}
}

// TestMillionCalls draws a million calls: the picture must be binned and
// small, and neither one call too many in a window nor a single 429 may
// vanish in the bins.
func TestMillionCalls(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow with -short")
	}
	const n = 1_000_000
	calls := make([]Call, 0, n+1)
	for s := range n / 100 {
		// 100 calls at every whole second: exactly 100/s and 6000/min.
		c := Call{Start: t0.Add(time.Duration(s) * time.Second), Runtime: 1500 * time.Millisecond}
		for range 100 {
			calls = append(calls, c)
		}
	}
	calls[333_333].Outcome = Failed
	calls[777_777].Outcome = Refused
	calls = append(calls, Call{Start: t0.Add(5000*time.Second + time.Millisecond)}) // the 101st in a second
	rules := []Rule{{N: 100, Window: time.Second, Label: "100/s"}, {N: 6000, Window: time.Minute, Label: "6000/min"}}

	out := render(t, rules, calls, nil, Options{})
	if len(out) >= 1<<20 {
		t.Errorf("picture of a million calls is %d bytes, want under 1 MiB", len(out))
	}
	t.Logf("%d bytes", len(out))
	root := parseSVG(t, out)

	cg := root.one(t, "calls")
	if got := cg.attr("data-mode"); got != "bins" {
		t.Errorf("calls data-mode = %q, want bins", got)
	}
	if n := len(cg.find("call")); n != 0 {
		t.Errorf("%d per-call ticks for a million calls, want none", n)
	}
	for _, o := range []string{"failed", "refused"} {
		var d string
		for _, g := range cg.find("outcome") {
			if g.attr("data-outcome") == o {
				d = g.one(t, "bar").attr("d")
			}
		}
		// One bar segment, at least minSeg pixels high: "M x yh1vHh-1z".
		if strings.Count(d, "M") != 1 {
			t.Errorf("%s bars = %q, want one segment", o, d)
			continue
		}
		_, h, _ := strings.Cut(d, "v")
		h, _, _ = strings.Cut(h, "h")
		if parseNum(t, h) < minSeg {
			t.Errorf("%s bar is %s pixels high, want at least %d", o, h, minSeg)
		}
	}

	for _, g := range root.find("rule") {
		limitY := g.one(t, "limit-100").num(t, "y1")
		top := slices.Min(pathYs(t, g.one(t, "occupancy").attr("d")))
		if top >= limitY {
			t.Errorf("rule %s: one call over the limit is hidden: occupancy reaches y = %v, line at %v", g.attr("data-rule"), top, limitY)
		}
		if len(g.find("breach")) != 1 {
			t.Errorf("rule %s: no breach mark", g.attr("data-rule"))
		}
	}
	if got := root.find("rule")[0].attr("data-peak"); got != "1.01" {
		t.Errorf("100/s: data-peak = %q, want 1.01", got)
	}
}

// TestEscaping gives labels and a title full of markup: they must come
// back as text, and the picture must stay well-formed.
func TestEscaping(t *testing.T) {
	label := `<b>"5"</b> & 'co' per 1s]]>`
	title := "</text></svg><script>alert(1)</script>\nnext line\x00"
	rules := []Rule{{N: 5, Window: time.Second, Label: label}}
	out := render(t, rules, seedCalls(), nil, Options{Title: title})
	if bytes.Contains(out, []byte("<script")) || bytes.Contains(out, []byte("<b>")) {
		t.Fatalf("markup from a label reached the picture:\n%s", out)
	}
	root := parseSVG(t, out)
	g := root.one(t, "rule")
	if got := g.attr("data-rule"); got != label {
		t.Errorf("data-rule = %q, want %q", got, label)
	}
	if got := g.one(t, "rule-label").text(); got != label {
		t.Errorf("rule label = %q, want %q", got, label)
	}
	if got, want := root.one(t, "title").text(), strings.ReplaceAll(title, "\x00", "\uFFFD"); got != want {
		t.Errorf("title = %q, want %q", got, want)
	}
}

// TestRenderErrors checks that input Render cannot draw is refused, and
// that nothing is written then.
func TestRenderErrors(t *testing.T) {
	ok := []Rule{{N: 5, Window: time.Second}}
	tests := []struct {
		name  string
		rules []Rule
		calls []Call
		opts  Options
		want  string
	}{
		{"zero limit", []Rule{{N: 0, Window: time.Second, Label: "0/s"}}, nil, Options{}, `plot: rule "0/s": limit 0 is not positive`},
		{"zero window", []Rule{{N: 5}}, nil, Options{}, `plot: rule "5/0s": window 0s is not positive`},
		{"negative window", []Rule{{N: 5, Window: -time.Second, Label: "x"}}, nil, Options{}, `plot: rule "x": window -1s is not positive`},
		{"unknown outcome", ok, []Call{{Start: t0}, {Start: t0, Outcome: 9}}, Options{}, "plot: call 1: unknown outcome 9"},
		{"narrow", ok, nil, Options{Width: 299}, "plot: width 299 is below the minimum of 300"},
		{"flat", ok, nil, Options{Height: -1}, "plot: height -1 is below the minimum of 200"},
		{"huge", ok, nil, Options{Width: 100_000_000}, "plot: size 100000000×0 is above the maximum of 20000×20000"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		err := Render(&buf, tt.rules, tt.calls, nil, tt.opts)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: Render = %v, want %q", tt.name, err, tt.want)
		}
		if buf.Len() != 0 {
			t.Errorf("%s: Render wrote %d bytes with an error", tt.name, buf.Len())
		}
	}
}

// TestInputOrder checks that Render leaves the caller's calls alone and
// draws the same picture whatever their order.
func TestInputOrder(t *testing.T) {
	calls := seedCalls()
	want := render(t, seedRules, calls, seedPauses, Options{})
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		rnd.Shuffle(len(calls), func(i, j int) { calls[i], calls[j] = calls[j], calls[i] })
		before := slices.Clone(calls)
		got := render(t, seedRules, calls, seedPauses, Options{})
		if !slices.Equal(calls, before) {
			t.Fatal("Render changed the order or content of its calls")
		}
		if !bytes.Equal(got, want) {
			t.Fatal("Render draws shuffled calls differently")
		}
	}
}

// TestEmpty draws runs with nothing, or nothing but pauses, in them.
func TestEmpty(t *testing.T) {
	root := parseSVG(t, render(t, seedRules, nil, nil, Options{}))
	if got := root.one(t, "calls").one(t, "panel-label").text(); got != "calls: none" {
		t.Errorf("calls panel of an empty run = %q", got)
	}
	if n := len(root.find("rule")); n != 2 {
		t.Errorf("%d rule groups, want 2", n)
	}

	root = parseSVG(t, render(t, nil, nil, seedPauses, Options{}))
	if n := len(root.one(t, "pauses").find("pause")); n != 1 {
		t.Errorf("%d pause bands, want 1", n)
	}
	if got := root.one(t, "axis-title").text(); !strings.Contains(got, "22:13:21.300 UTC") {
		t.Errorf("axis title = %q, want the axis to start at the pause", got)
	}
}

// TestLongRun checks the axis of a run of hours and that tall stacks of
// rules make the picture taller rather than unreadable.
func TestLongRun(t *testing.T) {
	var calls []Call
	for k := range 200 {
		calls = append(calls, Call{Start: t0.Add(time.Duration(k) * time.Minute)})
	}
	var rules []Rule
	for k := range 12 {
		rules = append(rules, Rule{N: k + 1, Window: time.Hour})
	}
	root := parseSVG(t, render(t, rules, calls, nil, Options{}))
	var labels []string
	for _, l := range root.find("tick-label") {
		labels = append(labels, l.text())
	}
	if want := []string{"0", "30m", "1h", "1h30m", "2h", "2h30m", "3h"}; !slices.Equal(labels, want) {
		t.Errorf("tick labels = %q, want %q", labels, want)
	}
	if h := root.num(t, "height"); h <= defaultHeight {
		t.Errorf("height = %v with 12 rules, want more than %d", h, defaultHeight)
	}
}

// TestNarrow draws the seed run at the smallest width: the legend wraps
// onto rows of its own, above the panels, and stays inside the picture.
func TestNarrow(t *testing.T) {
	root := parseSVG(t, render(t, seedRules, seedCalls(), seedPauses, Options{Width: minWidth, Height: minHeight}))
	var lowest float64
	for _, l := range root.one(t, "legend").find("legend-label") {
		x, y := l.num(t, "x"), l.num(t, "y")
		if x+textWidth(l.text()) > minWidth {
			t.Errorf("legend label %q at x = %v runs past the right edge", l.text(), x)
		}
		lowest = max(lowest, y)
	}
	if lowest == legendY {
		t.Errorf("legend on one row at width %d, want it wrapped", minWidth)
	}
	if y := root.find("rule-head")[0].num(t, "y"); y-11 < lowest {
		t.Errorf("first rule heading at y = %v overlaps the legend, whose last row is at %v", y, lowest)
	}
}

func TestPercent(t *testing.T) {
	tests := []struct {
		used, n int64
		want    string
	}{
		{0, 5, "0"},
		{5, 5, "100"},
		{6, 5, "120"},
		{1, 3, "33"},
		{100_001, 100_000, "100.001"}, // a breach never reads 100
		{99_999, 100_000, "99.999"},
		{1<<40 + 1, 1 << 40, "100.0000000001"},
	}
	for _, tt := range tests {
		if got := percent(tt.used, tt.n); got != tt.want {
			t.Errorf("percent(%d, %d) = %q, want %q", tt.used, tt.n, got, tt.want)
		}
	}
}
