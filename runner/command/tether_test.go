package command

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTetherEnviron: the command tied to a reaper gets a JobEnv entry of
// its own in place of the one it inherited (a pace exec run as a job of
// pace run); without a reaper its environment is left as given.
func TestTetherEnviron(t *testing.T) {
	env := []string{"A=1", JobEnv + "=OUTER.3", "B=2"}

	none := NewTether("", nil, 0)
	if got := none.Environ(env); !slices.Equal(got, env) {
		t.Errorf("Environ without a reaper = %q, want %q", got, env)
	}
	none.Close()

	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat to stand in for the reaper")
	}
	tt := NewTether(cat, []string{"cat"}, 0)
	defer tt.Close()
	if tt.mark == "" {
		t.Skip("no reaper here (not Linux, or no pidfds)")
	}
	got := tt.Environ(env)
	var marks []string
	for _, kv := range got {
		if strings.HasPrefix(kv, JobEnv+"=") {
			marks = append(marks, kv)
		}
	}
	if len(marks) != 1 || marks[0] != tt.mark || !slices.Contains(got, "A=1") || !slices.Contains(got, "B=2") {
		t.Errorf("Environ(%q) = %q, want A=1, B=2 and %s alone", env, got, tt.mark)
	}
	if env[1] != JobEnv+"=OUTER.3" {
		t.Errorf("Environ changed its argument: %q", env)
	}
}

// TestTetherLazy: a reaper starts only once the command has run for the
// delay given, so a command that ends sooner costs no process; the
// command's environment holds its JobEnv entry from the start, so that
// what it started meanwhile is found once the reaper runs; and a start
// that comes after Close (a timer that fired as the command ended) starts
// nothing. With no delay it starts at once.
func TestTetherLazy(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat to stand in for the reaper")
	}
	now := NewTether(cat, []string{"cat"}, 0)
	if now.mark == "" {
		now.Close()
		t.Skip("no reaper here (not Linux, or no pidfds)")
	}
	if now.r.p == nil || !now.started {
		t.Errorf("NewTether(after 0) started no reaper")
	}
	now.Close()

	lazy := NewTether(cat, []string{"cat"}, time.Hour)
	if lazy.r.p != nil || lazy.started {
		t.Errorf("NewTether(after an hour) started its reaper at once")
	}
	if got := lazy.Environ([]string{"A=1"}); !slices.Contains(got, lazy.mark) {
		t.Errorf("Environ before the reaper starts = %q, want %s in it", got, lazy.mark)
	}
	lazy.Close()
	lazy.start() // the timer, late
	if lazy.r.p != nil || lazy.started {
		t.Errorf("a start after Close started a reaper")
	}
}
