// Package gctune gives the garbage collector of a pace process a fixed
// headroom over its live heap while that heap is small, instead of the
// runtime's default of as much again (and at least 4 MB).
//
// Why: pace fetch and pace proxy allocate a few kilobytes a request and
// keep little of it (a few MB live, bounded by -j and by the learners'
// histories). At the default GOGC=100 the heap's goal stays at its 4 MB
// floor, and 5,000 local requests made twelve collections, about a tenth
// of pace fetch's CPU with their assists and sweeping. With a headroom of
// 16 MB they make two or three. Where the live heap is as large as the
// headroom or larger, the percentage is the runtime's 100 and nothing
// changes, so the most this costs is the headroom: at most Headroom
// bytes of heap more than the default would let grow.
//
// A user's GOGC wins: Start does nothing when it is set. GOMEMLIMIT still
// applies, as always, on top of the percentage.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// Headroom is how far past the live heap its goal is set while the live
// heap is smaller than it.
const Headroom = 16 << 20

// minHeap is the runtime's least heap goal at GOGC=100. It scales with
// the percentage: at GOGC=p the goal is never below minHeap*p/100.
const minHeap = 4 << 20

// maxPercent is the percentage whose least goal is Headroom: above it,
// a small live heap would get more than Headroom.
const maxPercent = Headroom * 100 / minHeap

// Percent returns the GOGC percentage that puts the heap's next goal
// Headroom bytes past a live heap of live bytes: never less than the
// runtime's default of 100, and never more than maxPercent, whose least
// goal (Headroom) already holds a live heap under minHeap with room to
// spare.
func Percent(live uint64) int {
	if live == 0 {
		return maxPercent
	}
	return int(max(100, min(Headroom*100/live, maxPercent)))
}

var (
	once sync.Once
	// tuned, if set, is called after each retuning with the percentage
	// set (tests).
	tuned atomic.Pointer[func(int)]
)

// Start sets the percentage now and after every collection, unless the
// GOGC environment variable is set. It may be called more than once.
func Start() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	once.Do(func() {
		debug.SetGCPercent(maxPercent) // the first goal: Headroom
		arm()
	})
}

// sentinel is what each collection finds unreachable; its cleanup
// retunes the percentage and arms the next one. It holds a pointer so
// that it is not a tiny allocation, which a cleanup may never see freed.
type sentinel struct{ _ *int }

// arm allocates the next sentinel.
func arm() {
	runtime.AddCleanup(new(sentinel), func(struct{}) { retune() }, struct{}{})
}

// retune sets the percentage for the live heap the last collection
// found, and arms the next sentinel.
func retune() {
	// A sample of its own: cleanups may run in parallel (none of these
	// do, as each arms the next only when done, but nothing is shared).
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	p := 100
	if live[0].Value.Kind() == metrics.KindUint64 {
		p = Percent(live[0].Value.Uint64())
	}
	debug.SetGCPercent(p)
	if f := tuned.Load(); f != nil {
		(*f)(p)
	}
	arm()
}
