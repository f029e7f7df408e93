//go:build unix

package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
)

// These tests run pace on a real pseudo-terminal of a set width and look
// at the screen a terminal would show afterwards (screen_test.go), not
// at the bytes: a bar drawn over output that has no final newline passes
// every test of the byte stream and still hides the output.

// ptyRun runs the shell command line sh (pace is on $PATH: the test
// binary, see TestMain) on a terminal cols wide, in dir, and returns what
// the terminal received. resize, if set, is called with the bytes so far
// until it returns a new width, which the terminal then takes.
func ptyRun(t *testing.T, cols int, dir, sh string, resize func(sofar []byte) int) []byte {
	t.Helper()
	cmd := exec.Command("sh", "-c", sh)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TERM=xterm")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: 24})
	if err != nil {
		t.Fatalf("start %q on a terminal: %v", sh, err)
	}
	defer f.Close()
	var (
		mu  sync.Mutex
		out bytes.Buffer
	)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 4096)
		resized := resize == nil
		for {
			n, err := f.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			if !resized {
				if w := resize(out.Bytes()); w > 0 {
					pty.Setsize(f, &pty.Winsize{Cols: uint16(w), Rows: 24})
					resized = true
				}
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("%q: %v", sh, err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%q: still running after 30s", sh)
	}
	select {
	case <-copied: // the terminal is closed once the command has ended
	case <-time.After(10 * time.Second):
		t.Fatalf("%q: the terminal did not close", sh)
	}
	mu.Lock()
	defer mu.Unlock()
	return bytes.Clone(out.Bytes())
}

// barLine matches the bar as pace draws it: a percentage and cells, or a
// spinner, then the count.
var barLine = regexp.MustCompile(`(\d+% \[[█·]*\]|(^|\r)[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]) +\d+(/\d+)? done`)

// checkScreen replays raw on a screen cols wide, and checks what every
// terminal test wants: pace wrote nothing the model does not know, the
// bar was drawn and never wrapped, no copy of it is left, and the summary
// comes last. It returns the screen's lines from the first to the
// summary's first line.
func checkScreen(t *testing.T, cols int, raw []byte) []string {
	t.Helper()
	s := newScreen(cols)
	s.Write(raw)
	lines := s.text()
	shown := strings.Join(lines, "\n")
	for _, e := range s.errs {
		t.Errorf("terminal: %s", e)
	}
	for _, w := range s.wrapped {
		if barLine.MatchString(w) {
			t.Errorf("the bar is wider than %d columns: %q", cols, w)
		}
	}
	if !barLine.Match(raw) {
		t.Errorf("no bar was drawn: %q", raw)
	}
	summary := -1
	for i, l := range lines {
		if barLine.MatchString(l) {
			t.Errorf("a copy of the bar is left on screen: %q; screen:\n%s", l, shown)
		}
		if summaryLine.MatchString(l) {
			summary = i
		}
	}
	if summary < 0 {
		t.Fatalf("no summary on screen:\n%s", shown)
	}
	return lines[:summary+1]
}

// summaryLine matches the summary's first line.
var summaryLine = regexp.MustCompile(`^pace: \d+ ok`)

var terminalWidths = []int{40, 80, 200}

// TestTerminalOutputWithoutNewline: bodies with no final newline (compact
// JSON, printf) are all on screen at the end, the bar never drawn over
// them, with a known total (:::) and an unknown one (a pipe).
func TestTerminalOutputWithoutNewline(t *testing.T) {
	for _, cols := range terminalWidths {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				id := strings.TrimPrefix(r.URL.Path, "/")
				fmt.Fprintf(w, `{"id":%s,"name":"repo%s"}`, id, id)
			}))
			defer srv.Close()
			for name, sh := range map[string]string{
				"known total":   `pace run -r 1/100ms -j 1 -- printf '{"id":%s,"name":"repo%s"}' {} {} ::: 1 2 3 4 5`,
				"unknown total": `seq 5 | pace run -r 1/100ms -j 1 -- printf '{"id":%s,"name":"repo%s"}' {} {}`,
				"fetch":         `seq 5 | pace fetch -r 1/100ms -j 1 ` + srv.URL + `/{}`,
			} {
				raw := ptyRun(t, cols, dir, sh, nil)
				lines := checkScreen(t, cols, raw)
				shown := strings.Join(lines, "\n")
				for i := 1; i <= 5; i++ {
					if body := fmt.Sprintf(`{"id":%d,"name":"repo%d"}`, i, i); !strings.Contains(shown, body) {
						t.Errorf("%s: body %s is not on screen:\n%s\nbytes: %q", name, body, shown, raw)
					}
				}
				if last := lines[len(lines)-1]; !strings.HasPrefix(last, "pace: 5 ok") || len(lines) != 6 {
					t.Errorf("%s: screen\n%s\nwant the 5 bodies, each on a line, then the summary", name, shown)
				}
			}
		})
	}
}

// TestTerminalBarFits: a long status (failures, a rule, an ETA) is cut to
// the terminal's width, and the width is read again after a resize.
func TestTerminalBarFits(t *testing.T) {
	for _, cols := range terminalWidths {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			items := filepath.Join(dir, "items")
			os.WriteFile(items, []byte("1\n2\n3\n4\n5\n6\n"), 0o644)
			raw := ptyRun(t, cols, dir, `pace run -r 2/200ms,3/300ms -j 2 -a items -- sh -c 'echo line {}; test {} -gt 2'`, nil)
			lines := checkScreen(t, cols, raw)
			shown := strings.Join(lines, "\n")
			for i := 1; i <= 6; i++ {
				if !strings.Contains(shown, fmt.Sprintf("line %d", i)) {
					t.Errorf("output line %d is not on screen:\n%s", i, shown)
				}
			}
		})
	}
	t.Run("resize", func(t *testing.T) {
		t.Parallel()
		// 2s: after a resize the bar is drawn again once the size has
		// held for termbar.ResizeSettle.
		raw := ptyRun(t, 200, t.TempDir(), `seq 20 >items; pace run -r 1/100ms -j 1 -a items -- echo {}`, func(sofar []byte) int {
			if bytes.Contains(sofar, []byte("% [")) { // a bar with the total known
				return 40
			}
			return 0
		})
		// Each draw is "\r", the bar, and an erase to the end of the line.
		var draws []string
		for _, m := range regexp.MustCompile("\r([^\r\x1b]*)\x1b\\[0K").FindAllSubmatch(raw, -1) {
			draws = append(draws, string(m[1]))
		}
		if len(draws) < 2 {
			t.Fatalf("%d bars drawn, want at least 2: %q", len(draws), raw)
		}
		if widest := slices.MaxFunc(draws, func(a, b string) int { return utf8.RuneCountInString(a) - utf8.RuneCountInString(b) }); utf8.RuneCountInString(widest) <= 40 {
			t.Errorf("widest bar %q is %d columns wide, want more than 40 on a 200-column terminal", widest, utf8.RuneCountInString(widest))
		}
		if last := draws[len(draws)-1]; utf8.RuneCountInString(last) > 37 {
			t.Errorf("last bar %q is %d columns wide after a resize to 40, want at most 37", last, utf8.RuneCountInString(last))
		}
	})
}

// TestTerminalDumb: on a terminal that knows no escape sequences (TERM
// dumb or unset) progress is status lines, as in a log: no bar.
func TestTerminalDumb(t *testing.T) {
	for _, term := range []string{"TERM=dumb", "TERM="} {
		raw := ptyRun(t, 80, t.TempDir(), term+` pace run -r 2/s -j 1 --progress-interval 1s -- echo {} ::: 1 2 3 4`, nil)
		if bytes.ContainsAny(raw, "\x1b") || barLine.Match(raw) {
			t.Errorf("%s: escape sequences or a bar on the terminal: %q", term, raw)
		}
		if !regexp.MustCompile(`(?m)^pace: \d/4 done`).Match(raw) {
			t.Errorf("%s: no status line: %q", term, raw)
		}
	}
}

// TestTerminalPromptKept: text a shell left on the line before pace
// started (printf 'prompt> '; pace run ...) is still on screen at the
// end; the first bar went below it, not over it.
func TestTerminalPromptKept(t *testing.T) {
	raw := ptyRun(t, 40, t.TempDir(), `printf 'prompt> '; pace run -r 1/100ms -j 1 -- echo line {} ::: 1 2 3`, nil)
	lines := checkScreen(t, 40, raw)
	want := []string{"prompt>", "line 1", "line 2", "line 3"}
	if len(lines) != 5 || !slices.Equal(lines[:4], want) {
		t.Errorf("screen\n%s\nwant %q, then the summary", strings.Join(lines, "\n"), want)
	}
}

// TestTerminalServerPause: pace fetch's line about a long pause the
// server asked for is written as pace's other lines are, with the bar
// erased first: it was written after the bar, on its line, and left a
// copy of the bar in front of it.
func TestTerminalServerPause(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		fmt.Fprintf(w, "body %s\n", r.URL.Path)
	}))
	defer srv.Close()
	raw := ptyRun(t, 120, t.TempDir(), `seq 2 | pace fetch -j 1 `+srv.URL+`/{}`, nil)
	lines := checkScreen(t, 120, raw)
	shown := strings.Join(lines, "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "pace: the server asked for a pause of 3s") ||
		!slices.Equal(lines[1:3], []string{"body /1", "body /2"}) {
		t.Errorf("screen\n%s\nwant the line about the pause, the 2 bodies and the summary", shown)
	}
}

// TestTerminalStdoutPiped: job output that reaches the terminal through
// a pipe's reader (pace run ... | cat, | jq, | tee log) is never behind a
// copy of the bar: pace cannot see it, so it draws no bar there
// (--progress auto). The bar was drawn, the reader's lines written after
// it on its row, and the bar drawn again below: "  40% [████······]
// 2/5 done, ... line 3".
func TestTerminalStdoutPiped(t *testing.T) {
	t.Parallel()
	raw := ptyRun(t, 80, t.TempDir(), `pace run -r 1/100ms -j 1 -- echo line {} ::: 1 2 3 4 5 | cat`, nil)
	s := newScreen(80)
	s.Write(raw)
	lines := s.text()
	shown := strings.Join(lines, "\n")
	for _, e := range s.errs {
		t.Errorf("terminal: %s", e)
	}
	if barLine.Match(raw) {
		t.Errorf("a bar was drawn: %q", raw)
	}
	for i := 1; i <= 5; i++ {
		if !slices.Contains(lines, fmt.Sprintf("line %d", i)) {
			t.Errorf("output line %d is not on screen whole, on a line of its own:\n%s", i, shown)
		}
	}
	// The summary on a line of its own; not necessarily after line 5:
	// cat, another process, may write that after pace has ended.
	if !slices.ContainsFunc(lines, summaryLine.MatchString) {
		t.Errorf("screen\n%s\nwant the summary on a line of its own", shown)
	}
}
