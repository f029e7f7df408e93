package cmd

import (
	"fmt"
	"io"
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

	"github.com/pace-cli/pace/internal/items"
	"github.com/pace-cli/pace/internal/progress"
	"github.com/pace-cli/pace/internal/termbar"
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
		mode            string
		tty, dumb, pipe bool
		want            string
	}{
		{progressAuto, true, false, false, progressAlways},
		{progressAuto, false, false, false, progressLines},
		{progressAuto, true, true, false, progressLines},  // TERM=dumb: no escape sequences
		{progressAuto, true, false, true, progressLines},  // | jq: its output may reach the terminal
		{progressAuto, false, false, true, progressLines}, // 2>&1 | tee log
		{progressAlways, false, false, false, progressAlways},
		{progressAlways, true, true, false, progressAlways},
		{progressAlways, true, false, true, progressAlways},
		{progressLines, true, false, false, progressLines},
		{progressNever, true, false, false, progressNever},
	} {
		ios, _, _, _ := Test()
		ios.SetStderrTTY(tt.tty)
		ios.SetStdoutPipe(tt.pipe)
		ios.dumb = tt.dumb
		if got := newDisplay(ios, tt.mode, time.Second).mode; got != tt.want {
			t.Errorf("newDisplay(--progress %s, stderr tty %v, dumb %v, stdout a pipe %v).mode = %s, want %s", tt.mode, tt.tty, tt.dumb, tt.pipe, got, tt.want)
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
	d := &display{w: scr, mode: progressAlways, width: func() int { return cols }, outOnScreen: true, bar: termbar.New(scr), line: termbar.NewLine(false, nil)}
	return d, scr
}

// setStatus draws the bar with done of total and the parts after the
// count.
func (d *display) setStatus(done, total int64, parts ...progress.Part) {
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
	d.setStatus(1, 4, progress.Part{Text: "waiting on 2/s", Drop: 3})
	// 40 columns: the rule is dropped rather than the bar made narrow.
	check("first draw", "  25% [████··············]  1/4 done")
	d.setStatus(2, 4)
	check("redraw", "  50% [█████████·········]  2/4 done")

	out := d.screen(&bytesWriter{scr}, true)
	d.write(func() { out.Write([]byte(`{"id":1}`)) })
	check("output without a newline", `{"id":1}`, "  50% [█████████·········]  2/4 done")
	d.write(func() { out.Write([]byte(`{"id":2}`)) })
	check("more output", `{"id":1}`, `{"id":2}`, "  50% [█████████·········]  2/4 done")
	d.write(func() { out.Write([]byte("line\n")) })
	check("a whole line", `{"id":1}`, `{"id":2}`, "line", "  50% [█████████·········]  2/4 done")
	dw := displayWriter{d, scr}
	fmt.Fprintf(dw, "pace: a warning\n")
	check("a warning", `{"id":1}`, `{"id":2}`, "line", "pace: a warning", "  50% [█████████·········]  2/4 done")
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
// three columns free; parts are dropped, rate first, before the bar gets under
// ten cells; where the bar's decoration leaves no room for a cell and the
// whole count, the text is drawn alone (the count was cut: "120/100…").
func TestDisplayFitsTheWidth(t *testing.T) {
	parts := []progress.Part{{Text: "3 failed", Drop: 1}, {Text: "4.90/s", Drop: 4}, {Text: "waiting on 5/s", Drop: 3}, {Text: "ETA 3m20s", Drop: 2}}
	for _, tt := range []struct {
		cols  int
		total int64
		want  string
	}{
		{200, 1000, "  12% [████····································]  120/1000 done, 3 failed, 4.90/s, waiting on 5/s, ETA 3m20s"},
		{80, 1000, "  12% [█···············]  120/1000 done, 3 failed, waiting on 5/s, ETA 3m20s"},
		{60, 1000, "  12% [█···········]  120/1000 done, 3 failed, ETA 3m20s"},
		{40, 1000, "  12% [█············]  120/1000 done"},
		{28, 1000, "  12% [·]  120/1000 done"},
		{27, 1000, "120/1000 done, 3 failed"},
		{26, 1000, "120/1000 done, 3 failed"},
		{22, 1000, "120/1000 done"},
		{16, 1000, "120/1000 done"},
		{40, -1, "⠋  120 done, 3 failed, ETA 3m20s"},
		{15, -1, "⠋  120 done"},
		{12, -1, "120 done"},
	} {
		d, scr := testDisplay(tt.cols)
		d.setStatus(120, tt.total, parts...)
		got := scr.text()
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("%d columns, total %d: screen %q, want %q", tt.cols, tt.total, got, tt.want)
		}
		if len(got) == 1 && utf8.RuneCountInString(got[0]) > tt.cols-3 {
			t.Errorf("%d columns: line %q is %d wide", tt.cols, got[0], utf8.RuneCountInString(got[0]))
		}
	}
}

// TestDisplayEchoDoesNotWrap: the terminal echoes ^C (or ^Z, ^\) after
// the bar when the user types it; at any width the echo stays on the
// bar's line, so erasing that line erases the bar whole.
func TestDisplayEchoDoesNotWrap(t *testing.T) {
	long := progress.Part{Text: strings.Repeat("waiting on 5/s, ", 20)} // never dropped: cut to fill the line
	for cols := 12; cols <= 120; cols++ {
		for _, total := range []int64{1000, -1} {
			d, scr := testDisplay(cols)
			d.setStatus(120, total, long)
			scr.Write([]byte("^C"))
			d.close()
			// Too narrow for a bar, nothing is drawn and the echo stays.
			if got := scr.text(); len(got) > 1 || len(got) == 1 && got[0] != "^C" || scr.wraps > 0 {
				t.Errorf("%d columns, total %d: after ^C and erasing the bar, screen %q (%d wraps), want nothing of the bar", cols, total, got, scr.wraps)
			}
		}
	}
}

// TestDisplayNarrowed: a terminal narrowed under the bar re-wraps it over
// several rows (tmux, VTE); erasing it erases every one of them, and the
// output above stays. A terminal that does not reflow (xterm) cuts the
// bar instead: the rows above are output, and stay too.
func TestDisplayNarrowed(t *testing.T) {
	parts := []progress.Part{{Text: "3 failed", Drop: 1}, {Text: "waiting on 5/s", Drop: 3}, {Text: "ETA 3m20s", Drop: 2}}
	for _, reflow := range []bool{true, false} {
		for _, to := range []int{20, 33, 45, 60, 99} {
			d, scr := testDisplay(120)
			d.bar.Reflow = reflow
			out := d.screen(&bytesWriter{scr}, true)
			d.write(func() { out.Write([]byte("line 1\nline 2\n")) })
			d.setStatus(120, 1000, parts...)
			scr.resize(to, reflow)
			d.width = func() int { return to }
			d.write(func() { out.Write([]byte("line 3\n")) })
			got := scr.text()
			if len(got) != 4 || !slices.Equal(got[:3], []string{"line 1", "line 2", "line 3"}) || !strings.HasPrefix(got[3], "  12% [") && got[3] != "120/1000 done" {
				t.Errorf("reflow %v, 120 columns narrowed to %d: screen\n%s\nwant the 3 lines of output and the bar", reflow, to, strings.Join(got, "\n"))
			}
			d.close()
			if got, want := scr.text(), []string{"line 1", "line 2", "line 3"}; !slices.Equal(got, want) {
				t.Errorf("reflow %v, 120 columns narrowed to %d, bar erased: screen\n%s\nwant only the output", reflow, to, strings.Join(got, "\n"))
			}
		}
	}
}

// TestDisplayUnknownColumn: what was on the terminal's line when pace
// started (printf 'prompt> '; pace run ...), or when it was continued
// in the background after Ctrl-Z (the shell's prompt), stays: the bar
// goes below it, not over it. From a line's first column the bar takes
// that line, with no blank line above it.
func TestDisplayUnknownColumn(t *testing.T) {
	for _, tt := range []struct {
		before string
		want   []string
	}{
		{"prompt> ", []string{"prompt>", "  25% [████··············]  1/4 done"}},
		{"", []string{"  25% [████··············]  1/4 done"}},
		{"line\n", []string{"line", "  25% [████··············]  1/4 done"}},
		{strings.Repeat("x", 39), []string{strings.Repeat("x", 39), "  25% [████··············]  1/4 done"}},
		{strings.Repeat("x", 40), []string{strings.Repeat("x", 40), "  25% [████··············]  1/4 done"}},
	} {
		d, scr := testDisplay(40)
		d.line = termbar.NewLine(true, nil)
		scr.Write([]byte(tt.before))
		d.setStatus(1, 4)
		if got := scr.text(); !slices.Equal(got, tt.want) {
			t.Errorf("after %q: screen %q, want %q", tt.before, got, tt.want)
		}
		d.close()
		if got, want := scr.text(), tt.want[:len(tt.want)-1]; !slices.Equal(got, want) {
			t.Errorf("after %q, closed: screen %q, want %q", tt.before, got, want)
		}
	}

	d, scr := testDisplay(40)
	d.line.OnTerminal = true
	d.setStatus(1, 4)
	out := d.screen(&bytesWriter{scr}, true)
	d.write(func() { out.Write([]byte("a\n")) })
	// Ctrl-Z, then bg: the shell says so and prompts while pace is stopped.
	d.stopped(func() { scr.Write([]byte("^Z\n[1]+  Stopped    pace run\n$ bg\n[1]+ pace run &\n$ ")) })
	d.setStatus(2, 4)
	want := []string{"a", "^Z", "[1]+  Stopped    pace run", "$ bg", "[1]+ pace run &", "$", "  50% [█████████·········]  2/4 done"}
	if got := scr.text(); !slices.Equal(got, want) {
		t.Errorf("continued in the background: screen\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDisplayUnfinishedEscape: output that leaves an escape sequence
// open (a title never ended, a colour cut short) would make the terminal
// take the newline and the bar that follow for the rest of it, and the
// bar's erase would then erase the output's line; pace ends the sequence
// (CAN) before it writes.
func TestDisplayUnfinishedEscape(t *testing.T) {
	for _, open := range []string{"\x1b]0;title", "\x1b]52;c;aGVsbG8="} {
		d, scr := testDisplay(40)
		d.line.OnTerminal = true
		d.setStatus(1, 4)
		out := d.screen(&bytesWriter{scr}, true)
		d.write(func() { out.Write([]byte("out" + open)) })
		d.setStatus(2, 4)
		d.write(func() { out.Write([]byte("next\n")) })
		d.close()
		if got, want := scr.text(), []string{"out", "next"}; !slices.Equal(got, want) || len(scr.errs) > 0 {
			t.Errorf("after output ending in %q: screen %q (errors %q), want %q", open, got, scr.errs, want)
		}
	}
}

// TestDisplayInBackground: in the background (pace run ... &, or bg after
// Ctrl-Z) no bar is drawn: it would be drawn over the shell's prompt and
// what the user types, every 200 ms. Output is written as it comes. Back
// in the foreground (fg), the bar is drawn below what the shell wrote.
func TestDisplayInBackground(t *testing.T) {
	d, scr := testDisplay(40)
	fg := false
	d.line = termbar.NewLine(true, func() bool { return fg })
	scr.Write([]byte("$ pace run ... &\n[1] 4242\n$ "))
	d.setStatus(1, 4)
	out := d.screen(&bytesWriter{scr}, true)
	d.write(func() { out.Write([]byte("a\n")) })
	scr.Write([]byte("ls"))
	d.setStatus(2, 4)
	want := []string{"$ pace run ... &", "[1] 4242", "$ a", "ls"}
	if got := scr.text(); !slices.Equal(got, want) {
		t.Errorf("in the background: screen\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	scr.Write([]byte("\n$ fg\npace run ...\n"))
	fg = true
	d.setStatus(3, 4)
	want = []string{"$ pace run ... &", "[1] 4242", "$ a", "ls", "$ fg", "pace run ...", "  75% [█████████████·····]  3/4 done"}
	if got := scr.text(); !slices.Equal(got, want) {
		t.Errorf("back in the foreground: screen\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDisplayResizeStorm: a terminal being resized (a window dragged)
// may tell pace of its size late: tmux re-wraps its screen at once but
// tells a program of at most one resize every 250 ms. The bar is erased
// when a resize is told, and not drawn again until the size has held for
// termbar.ResizeSettle: a bar drawn or erased for a size the screen no longer has
// left pieces of itself between the lines of output, or erased them.
func TestDisplayResizeStorm(t *testing.T) {
	parts := []progress.Part{{Text: "3 failed", Drop: 1}, {Text: "waiting on 5/s", Drop: 3}, {Text: "ETA 3m20s", Drop: 2}}
	for _, reflow := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			d, scr := testDisplay(120)
			d.bar.Reflow = reflow
			told := 120 // the width the terminal tells
			d.width = func() int { return told }
			out := d.screen(&bytesWriter{scr}, true)
			d.setStatus(120, 1000, parts...)
			step := func(screen, tells int, line string) {
				scr.resize(screen, reflow)
				if tells > 0 {
					told = tells
					d.resized()
				}
				d.write(func() { io.WriteString(out, line) })
				d.setStatus(120, 1000, parts...) // the ticker
				time.Sleep(100 * time.Millisecond)
			}
			step(50, 50, "line 1\n")   // narrowed, and told
			step(30, 0, `{"id":2}`)    // narrowed again, told later
			step(100, 0, `{"id":3}`)   // widened, told later
			step(100, 100, "line 4\n") // told at last
			step(100, 0, `{"id":5}`)
			for _, l := range scr.text() {
				if barLine.MatchString(l) {
					t.Errorf("reflow %v: the bar is drawn while the terminal is being resized: %q", reflow, l)
				}
			}
			time.Sleep(termbar.ResizeSettle)
			d.setStatus(120, 1000, parts...)
			got := scr.text()
			// Output without a final newline has a line of its own, as
			// when the bar is drawn below it.
			want := []string{"line 1", `{"id":2}`, `{"id":3}`, "line 4", `{"id":5}`}
			if len(got) != 6 || !slices.Equal(got[:5], want) || !strings.HasPrefix(got[5], "  12% [") {
				t.Errorf("reflow %v: screen\n%s\nwant the 5 lines of output and the bar", reflow, strings.Join(got, "\n"))
			}
		})
	}
}

func TestDisplayWithoutBar(t *testing.T) {
	for _, mode := range []string{progressLines, progressNever} {
		w := &writeLog{}
		d := &display{w: w, mode: mode, line: termbar.NewLine(false, nil)}
		d.setStatus(0, 2)
		d.write(func() { d.screen(w, true).Write([]byte("job output")) })
		d.close()
		if got, want := w.take(), []string{"job output"}; !slices.Equal(got, want) {
			t.Errorf("--progress %s: writes %q, want only %q", mode, got, want)
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
		if want := regexp.MustCompile(`\r  50% \[█{13}·{13}\]  4/8 done, 4\.00/s, waiting on 4/s, ETA 1s \x1b\[0K`); !want.MatchString(raw) {
			t.Errorf("stderr %q lacks a bar matching %s", raw, want)
		}
		for _, m := range regexp.MustCompile(`([0-9.]+)/s,`).FindAllStringSubmatch(raw, -1) {
			if r, _ := strconv.ParseFloat(m[1], 64); r > 4 {
				t.Errorf("the bar shows %s/s under 4/s", m[1])
			}
		}
	})
}

// TestProgressBarResized: when the terminal tells of a resize (SIGWINCH)
// the bar is erased at once, and drawn again only once the size has held
// for termbar.ResizeSettle.
func TestProgressBarResized(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testOptions(t, 1)
		o.Progress, o.Summary = progressAuto, summaryNone
		o.Input = itemsFile(t, 2)
		ts := newTestSession(t, "", o, &fakeExec{took: 2 * time.Second})
		ios := ts.s.f.IOStreams
		ios.SetStderrTTY(true)
		w := &writeLog{}
		ios.ErrOut = w
		notified := make(chan chan<- os.Signal, 1)
		ios.SetResizes(func(c chan<- os.Signal) { notified <- c })
		wait := ts.start()
		resizes := <-notified
		bars := func(writes []string) (n int) {
			for _, s := range writes {
				if barLine.MatchString(s) {
					n++
				}
			}
			return n
		}
		time.Sleep(time.Second + barEvery/2) // between two ticks
		if n := bars(w.take()); n == 0 {
			t.Fatal("no bar drawn in the first second")
		}
		resizes <- os.Interrupt // which signal does not matter
		synctest.Wait()
		if got := w.take(); len(got) != 1 || got[0] != "\x1b[2K\r" {
			t.Errorf("writes when told of a resize: %q, want the bar erased", got)
		}
		time.Sleep(termbar.ResizeSettle - time.Millisecond)
		if got := w.take(); len(got) > 0 {
			t.Errorf("writes while the size settles: %q, want none", got)
		}
		time.Sleep(barEvery)
		if n := bars(w.take()); n == 0 {
			t.Errorf("no bar drawn once the size held for %v", termbar.ResizeSettle)
		}
		if code := wait(); code != ExitOK {
			t.Fatalf("run = exit %d", code)
		}
	})
}

// TestProgressWhileTyping: items typed on the terminal get no progress
// until the input ends (a bar redrawn every 200 ms would write over what
// the user types); then the bar shows, with the total.
func TestProgressWhileTyping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testOptions(t, 1)
		o.Progress, o.Summary = progressAuto, summaryNone
		ts := newTestSession(t, "", o, &fakeExec{took: 1500 * time.Millisecond})
		r, w := io.Pipe()
		ios := ts.s.f.IOStreams
		ios.In, ts.s.input = r, items.NewInput(r, "stdin")
		ios.SetStdinTTY(true)
		ios.SetStderrTTY(true)
		go func() {
			io.WriteString(w, "a\n")
			time.Sleep(time.Second)
			io.WriteString(w, "b\n")
			time.Sleep(200 * time.Millisecond)
			w.Close() // Ctrl-D at 1.2s; b runs until 2.5s
		}()
		if code := ts.run(); code != ExitOK {
			t.Fatalf("run = exit %d\n%s", code, ts.errOut)
		}
		raw := ts.errOut.String()
		if m := regexp.MustCompile(`\r[^\r]*[^/\d]\d+ done`).FindString(raw); m != "" {
			t.Errorf("progress %q drawn while the input is typed: stderr %q", m, raw)
		}
		if !regexp.MustCompile(`\r  50% \[[█·]+\]  1/2 done`).MatchString(raw) {
			t.Errorf("no bar once the input ended: stderr %q", raw)
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
