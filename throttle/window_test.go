package throttle

import (
	"testing"
	"time"
)

// step is one row of a window step table: at instant at, the window must
// report wait; if wait is 0 the call is recorded.
type step struct {
	at   time.Duration
	wait time.Duration
}

func runWindowSteps(t *testing.T, name string, w window, steps []step) {
	t.Helper()
	for i, s := range steps {
		now := int64(s.at)
		if got := time.Duration(w.delay(now)); got != s.wait {
			t.Fatalf("%s step %d: delay(%v) = %v, want %v", name, i, s.at, got, s.wait)
		}
		if s.wait == 0 {
			w.record(now)
		}
	}
}

func TestSlidingLogSteps(t *testing.T) {
	ms := time.Millisecond
	runWindowSteps(t, "3/s", newSlidingLog(3, int64(time.Second)), []step{
		{0, 0}, {0, 0}, {100 * ms, 0}, // full: calls at 0, 0, 100ms
		{100 * ms, 900 * ms},  // the oldest leaves at exactly 1s
		{999 * ms, 1 * ms},    // still in (t-1s, t]
		{1000 * ms, 0},        // a call at exactly t+W may follow the call at t
		{1000 * ms, 0},        // the second call at 0 leaves too
		{1000 * ms, 100 * ms}, // now 100ms, 1000, 1000: wait for 100ms to leave
		{1100 * ms, 0},
		{5 * time.Second, 0}, // long idle: everything has left
	})
	runWindowSteps(t, "1/ns", newSlidingLog(1, 1), []step{{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}})
}

func TestSlidingLogCount(t *testing.T) {
	l := newSlidingLog(3, 10)
	for _, at := range []int64{0, 5, 10} {
		l.record(at)
	}
	for _, c := range []struct {
		now  int64
		want int
	}{{10, 2}, {14, 2}, {15, 1}, {19, 1}, {20, 0}} {
		if got := l.count(c.now); got != c.want {
			t.Errorf("count(%d) = %d, want %d", c.now, got, c.want)
		}
	}
	// Recording into a full ring overwrites the oldest and keeps the count right.
	l2 := newSlidingLog(2, 10)
	for i, at := range []int64{0, 1, 10, 11, 20, 21} {
		if d := l2.delay(at); d != 0 {
			t.Fatalf("delay(%d) = %d, want 0", at, d)
		}
		l2.record(at)
		if got, want := l2.count(at), min(i+1, 2); got != want {
			t.Fatalf("count(%d) = %d, want %d", at, got, want)
		}
	}
	if got := l2.count(21); got != 2 {
		t.Errorf("count(21) = %d, want 2", got)
	}
	if len(l2.buf) != 2 {
		t.Errorf("ring grew to %d entries, want 2", len(l2.buf))
	}
}

func TestSlidingCounterSteps(t *testing.T) {
	// 4 per 100 in buckets of 10 (10 buckets).
	c := newSlidingCounter(4, 100, 10)
	if c.g != 10 {
		t.Fatalf("bucket width = %d, want 10", c.g)
	}
	runWindowSteps(t, "4/100 counter", c, []step{
		{5, 0}, {6, 0}, {15, 0}, {25, 0},
		// Full. Bucket 0 ([0,10)) stops overlapping (t-100, t] at t = 10+100-1 = 109,
		// although the exact log would admit at 105: the counter pays up to one bucket.
		{50, 59},
		{108, 1},
		{109, 0}, // bucket 0 held two calls: two fit
		{109, 0},
		{109, 10}, // now bucket 1 ([10,20)) must leave: at 119
		{119, 0},
	})
}

func TestSlidingCounterNeverOverN(t *testing.T) {
	// Greedy calls at every instant they are allowed: an exact count over
	// every true window must never exceed n.
	const n, w = 7, 1000
	c := newSlidingCounter(n, w, 16)
	var calls []int64
	now := int64(0)
	for len(calls) < 500 {
		if d := c.delay(now); d > 0 {
			now += d
			continue
		}
		c.record(now)
		calls = append(calls, now)
		now += int64(len(calls) % 3) // bursts and gaps
	}
	for i := range calls {
		in := 0
		for j := i; j >= 0 && calls[j] > calls[i]-w; j-- {
			in++
		}
		if in > n {
			t.Fatalf("window (%d, %d] holds %d calls, more than %d", calls[i]-w, calls[i], in, n)
		}
	}
	// Throughput: at most one bucket (w/16) lost per window.
	span := calls[len(calls)-1] - calls[0]
	exact := int64(len(calls)/n-1) * w
	if span > exact*17/16+w {
		t.Errorf("500 calls took %d, want at most about %d (exact %d + 1/16)", span, exact*17/16, exact)
	}
}

func TestSlidingCounterBoundedMemory(t *testing.T) {
	c := newSlidingCounter(1_000_000, int64(24*time.Hour), counterBuckets)
	for i := range int64(2_000_000) {
		now := i * int64(100*time.Millisecond) // 2M calls over ~2.3 days
		if c.delay(now) == 0 {
			c.record(now)
		}
	}
	if len(c.idx) > counterBuckets+2 {
		t.Errorf("counter holds %d buckets, want at most %d", len(c.idx), counterBuckets+2)
	}
}
