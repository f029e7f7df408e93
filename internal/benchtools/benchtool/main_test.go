package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	items := filepath.Join(t.TempDir(), "items")
	if err := os.WriteFile(items, []byte("1 60\n2 60\n3 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		// 5 at 0, 5 at 1s, 2 at 2s (12/3s), 5 at 3s, 5 at 4s, 2 at 5s, 5 at 6s, 1 at 7s.
		{[]string{"fastest", "-rules", "5/s,12/3s", "-n", "30", "-jobs", "4"}, "7.0000 30 4 30\n"},
		// The same with every window 65ms wider: three waits on a window.
		{[]string{"fastest", "-rules", "5/s,12/3s", "-n", "30", "-jobs", "4", "-margin", "65ms"}, "7.1950 30 4 30\n"},
		{[]string{"fastest", "-rules", "20/s,60/5s", "-n", "200"}, "15.0000 200 0 200\n"},
		// 60 then 60 cannot share a second; 1 fits beside the second 60.
		{[]string{"fastest", "-rules", "cost:100/s", "-items", items}, "1.0000 3 0 121\n"},
		// The benchmark's inputs must not change between machines or releases.
		{[]string{"items", "-n", "5", "-max", "60", "-seed", "13"}, "1 18\n2 14\n3 46\n4 58\n5 19\n"},
	} {
		var out strings.Builder
		if err := run(c.args, &out); err != nil {
			t.Errorf("run(%q): %v", c.args, err)
			continue
		}
		if out.String() != c.want {
			t.Errorf("run(%q) = %q, want %q", c.args, out.String(), c.want)
		}
	}
	for _, args := range [][]string{
		nil,
		{"fastest", "-rules", "5/s"}, // no calls
		{"fastest", "-rules", "cost:50/s", "-items", items}, // a cost of 60 never fits
		{"fastest", "-rules", "5/x", "-n", "3"},             // a bad rule
		{"nonsense"},
	} {
		if err := run(args, &strings.Builder{}); err == nil {
			t.Errorf("run(%q) = nil error, want one", args)
		}
	}
}
