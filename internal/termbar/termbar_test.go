package termbar

import "testing"

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
