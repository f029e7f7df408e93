package termbar

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pace-cli/pace/internal/progress"
)

// TestReflows: rows above the bar's are erased only where the terminal
// re-wraps a narrowed line; xterm and the Linux console cut it, and tmux
// reflows inside any of them.
func TestReflows(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{"TERM": "xterm-256color", "VTE_VERSION": "7200"}, true},
		{map[string]string{"TERM": "xterm-256color"}, true},
		{map[string]string{"TERM": "xterm", "XTERM_VERSION": "XTerm(390)"}, false},
		{map[string]string{"TERM": "linux"}, false},
		{map[string]string{"TERM": "tmux-256color", "TMUX": "/tmp/tmux-1000/default,1,0", "XTERM_VERSION": "XTerm(390)"}, true},
	} {
		if got := Reflows(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("Reflows(%v) = %v, want %v", tt.env, got, tt.want)
		}
	}
}

// TestDrawNarrowKeepsCount: on a narrow terminal (20 columns) the count is
// shown whole, and nothing is drawn wider than the terminal less its free
// columns. With a known total the bar's percentage and brackets took 11
// columns, and the count was cut ("1234/…": a wrong number) beside a bar
// of no cells ("[]"); the bar goes first.
func TestDrawNarrowKeepsCount(t *testing.T) {
	for _, tt := range []struct {
		done, total int64
		cols        int
	}{
		{1234, 10000, 20},
		{0, 5, 20},
		{3, 5, 16},
		{12, -1, 20},
		{123456, 1000000, 24},
	} {
		var out bytes.Buffer
		b := New(&out)
		count := progress.CountText(tt.done, tt.total)
		b.Draw(tt.done, tt.total, []progress.Part{{Text: count}, {Text: "4.00/s", Drop: 4}, {Text: "ETA 3s", Drop: 2}}, tt.cols)
		shown := drawn(out.String())
		if !strings.Contains(shown, count) || utf8.RuneCountInString(shown) > tt.cols-freeCols {
			t.Errorf("Draw(%d of %d) at %d columns drew %q (%d columns); want %q whole within %d columns",
				tt.done, tt.total, tt.cols, shown, utf8.RuneCountInString(shown), count, tt.cols-freeCols)
		}
	}
	// Wide enough, the bar is drawn.
	var out bytes.Buffer
	New(&out).Draw(3, 5, []progress.Part{{Text: progress.CountText(3, 5)}}, 40)
	if shown := drawn(out.String()); !strings.Contains(shown, "60% [") {
		t.Errorf("Draw(3 of 5) at 40 columns drew %q, want a bar", shown)
	}
}

// drawn returns the text of the last draw in raw: after its last "\r",
// without escape sequences.
func drawn(raw string) string {
	if i := strings.LastIndexByte(raw, '\r'); i >= 0 {
		raw = raw[i+1:]
	}
	return regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]").ReplaceAllString(raw, "")
}
