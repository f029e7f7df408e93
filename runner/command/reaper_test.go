package command

import (
	"slices"
	"strings"
	"testing"
)

// TestReapKillsOnlyGroups: what is not a line of pace's, or names no
// group a kill may reach safely (0 is the reaper's own group, -1 every
// process of the user's), kills nothing.
func TestReapKillsOnlyGroups(t *testing.T) {
	var killed []int
	in := "+12\n+0\n+1\n+-1\n-\n+\nnoise\n+x\n+13\n-13\n+14\n+14\n-14\n-99\n"
	if err := reap(strings.NewReader(in), func(pgid int) { killed = append(killed, pgid) }); err != nil {
		t.Fatalf("reap = %v", err)
	}
	slices.Sort(killed)
	if want := []int{12, 14}; !slices.Equal(killed, want) {
		t.Errorf("reap killed groups %v, want %v", killed, want)
	}
}
