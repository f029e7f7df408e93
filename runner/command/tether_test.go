package command

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestTetherEnviron: the command tied to a reaper gets a JobEnv entry of
// its own in place of the one it inherited (a pace exec run as a job of
// pace run); without a reaper its environment is left as given.
func TestTetherEnviron(t *testing.T) {
	env := []string{"A=1", JobEnv + "=OUTER.3", "B=2"}

	none := NewTether("", nil)
	if got := none.Environ(env); !slices.Equal(got, env) {
		t.Errorf("Environ without a reaper = %q, want %q", got, env)
	}
	none.Close()

	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat to stand in for the reaper")
	}
	tt := NewTether(cat, []string{"cat"})
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
