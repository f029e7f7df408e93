package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 400},              // nothing live: the least goal, Headroom
		{1 << 20, 400},        // 1 MB: capped, the goal is still Headroom
		{4 << 20, 400},        // 4 MB: 4 + 16 MB
		{8 << 20, 200},        // 8 MB: 8 + 16 MB
		{16 << 20, 100},       // as much as the headroom: the default
		{1 << 30, 100},        // large: the default, never less
		{(16 << 20) / 3, 300}, // rounds down: never more than Headroom past
	} {
		if got := Percent(c.live); got != c.want {
			t.Errorf("Percent(%d) = %d, want %d", c.live, got, c.want)
		}
		// The goal this percentage sets is at most Headroom past the
		// live heap, or the runtime's own (twice the live heap).
		p := uint64(Percent(c.live))
		goal := max(c.live+c.live*p/100, minHeap*p/100)
		if goal > c.live+max(Headroom, c.live) {
			t.Errorf("live %d: goal %d is more than Headroom past it and more than the default", c.live, goal)
		}
	}
}

// TestStartLeavesAUsersGOGC checks that a GOGC in the environment, even
// an empty one, keeps the percentage as it is.
func TestStartLeavesAUsersGOGC(t *testing.T) {
	t.Setenv("GOGC", "") // set: Start must leave the collector alone
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	Start()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("with GOGC set, Start changed the percentage to %d", p)
	}
}

// TestStartRetunes checks that after Start each collection sets the
// percentage for the live heap it found: a live heap of 12 MB gets 16 MB
// past it (133%), not the 400% of a small one, and once it is gone the
// small heap's 400% is back.
func TestStartRetunes(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set in the environment: Start does nothing")
	}
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	got := make(chan int, 64)
	report := func(p int) {
		select {
		case got <- p:
		default:
		}
	}
	tuned.Store(&report)
	defer tuned.Store(nil)
	Start()
	keep := make([][]byte, 12)
	for i := range keep {
		keep[i] = make([]byte, 1<<20)
	}
	// Collections until one retunes for 12 MB and more live (those that
	// ran during the allocations may be reported first), then until one
	// retunes for a small heap again.
	until(t, got, "100% to 133% for 12 MB live", func(p int) bool { return p >= 100 && p <= 134 })
	runtime.KeepAlive(keep)
	keep = nil
	until(t, got, "400% for a small heap", func(p int) bool { return p == maxPercent })
}

// until runs collections until a retuning reports a percentage that ok
// accepts; it fails after a minute.
func until(t *testing.T, got <-chan int, want string, ok func(int) bool) {
	t.Helper()
	deadline := time.After(time.Minute)
	var seen []int
	for {
		runtime.GC()
		select {
		case p := <-got:
			if ok(p) {
				return
			}
			seen = append(seen, p)
		case <-deadline:
			t.Fatalf("no collection retuned the percentage to %s within a minute; seen %v", want, seen)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
