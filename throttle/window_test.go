package throttle

import (
	"math/rand/v2"
	"testing"
	"time"
)

// step is one row of a window step table: at instant at, a call of weight
// w (0 means 1) must wait wait; if wait is 0 the call is recorded.
type step struct {
	at   time.Duration
	wait time.Duration
	w    int
}

func runWindowSteps(t *testing.T, name string, win window, steps []step) {
	t.Helper()
	for i, s := range steps {
		now, w := int64(s.at), max(s.w, 1)
		if got := time.Duration(win.delay(now, w)); got != s.wait {
			t.Fatalf("%s step %d: delay(%v, %d) = %v, want %v", name, i, s.at, w, got, s.wait)
		}
		if s.wait == 0 {
			held := win.record(now, w, uint64(i+1))
			if used := win.used(now); held != used {
				t.Fatalf("%s step %d: record(%v, %d) = %d, want %d (used)", name, i, s.at, w, held, used)
			}
		}
	}
}

func TestSlidingLogSteps(t *testing.T) {
	ms := time.Millisecond
	runWindowSteps(t, "3/s", newSlidingLog(3, int64(time.Second)), []step{
		{at: 0}, {at: 0}, {at: 100 * ms}, // full: calls at 0, 0, 100ms
		{at: 100 * ms, wait: 900 * ms},  // the oldest leaves at exactly 1s
		{at: 999 * ms, wait: 1 * ms},    // still in (t-1s, t]
		{at: 1000 * ms},                 // a call at exactly t+W may follow the call at t
		{at: 1000 * ms},                 // the second call at 0 leaves too
		{at: 1000 * ms, wait: 100 * ms}, // now 100ms, 1000, 1000: wait for 100ms to leave
		{at: 1100 * ms},
		{at: 5 * time.Second}, // long idle: everything has left
	})
	runWindowSteps(t, "1/ns", newSlidingLog(1, 1), []step{{at: 0}, {at: 0, wait: 1}, {at: 1}, {at: 1, wait: 1}, {at: 2}})
}

func TestSlidingLogWeighted(t *testing.T) {
	ms := time.Millisecond
	runWindowSteps(t, "cost 10/s", newSlidingLog(10, int64(time.Second)), []step{
		{at: 0, w: 4},
		{at: 100 * ms, w: 5},                  // 9 held
		{at: 200 * ms, w: 2, wait: 800 * ms},  // 11 > 10: the 4 at 0 must leave
		{at: 200 * ms, w: 1},                  // a cheaper call fits (the limiter keeps FIFO, not the window)
		{at: 300 * ms, w: 10, wait: 900 * ms}, // the whole window must empty: the 1 at 200ms leaves at 1.2s
		{at: 1200 * ms, w: 10},
		{at: 1200 * ms, w: 1, wait: time.Second},
	})
}

func TestSlidingLogUsedAndRing(t *testing.T) {
	l := newSlidingLog(3, 10)
	for i, at := range []int64{0, 5, 10} {
		l.record(at, 1, uint64(i+1))
	}
	for _, c := range []struct {
		now  int64
		want int
	}{{10, 2}, {14, 2}, {15, 1}, {19, 1}, {20, 0}} {
		if got := l.used(c.now); got != c.want {
			t.Errorf("used(%d) = %d, want %d", c.now, got, c.want)
		}
	}
	// A full log keeps reusing its ring: it never holds more than n calls.
	l2 := newSlidingLog(2, 10)
	for i, at := range []int64{0, 1, 10, 11, 20, 21} {
		if d := l2.delay(at, 1); d != 0 {
			t.Fatalf("delay(%d, 1) = %d, want 0", at, d)
		}
		l2.record(at, 1, uint64(i+1))
		if got, want := l2.used(at), min(i+1, 2); got != want {
			t.Fatalf("used(%d) = %d, want %d", at, got, want)
		}
	}
	if len(l2.buf) != 2 {
		t.Errorf("ring grew to %d entries, want 2", len(l2.buf))
	}
}

func TestSlidingLogAdjust(t *testing.T) {
	l := newSlidingLog(10, 100)
	l.record(0, 3, 1)
	l.record(10, 3, 2)
	l.record(20, 3, 3)
	// The call at 10 really cost 6: 12 held, more than 10.
	l.adjust(2, 10, 3, 6)
	if got := l.used(20); got != 12 {
		t.Fatalf("used after raising a cost = %d, want 12", got)
	}
	if d := l.delay(20, 1); d != 80 {
		t.Errorf("delay(20, 1) = %d, want 80 (the call at 0 must leave)", d)
	}
	if d := l.delay(20, 2); d != 90 {
		t.Errorf("delay(20, 2) = %d, want 90 (the call at 10 must leave too)", d)
	}
	// It really cost 1: room at once.
	l.adjust(2, 10, 6, 1)
	if got := l.used(20); got != 7 {
		t.Fatalf("used after lowering a cost = %d, want 7", got)
	}
	if d := l.delay(20, 3); d != 0 {
		t.Errorf("delay(20, 3) = %d, want 0", d)
	}
	l.adjust(2, 10, 6, 2) // from is not the log's business: it keeps the call's weight
	if got := l.used(20); got != 8 {
		t.Errorf("used after a correction from a stale cost = %d, want 8", got)
	}
	l.adjust(99, 10, 1, 6) // unknown serial: nothing
	if got := l.used(150); got != 0 {
		t.Errorf("used(150) = %d, want 0", got)
	}
	l.adjust(1, 0, 3, 8) // already left: nothing
	if got := l.used(150); got != 0 {
		t.Errorf("used(150) after adjusting a forgotten call = %d, want 0", got)
	}
}

func TestSlidingLogSetWidth(t *testing.T) {
	l := newSlidingLog(1, 100)
	l.record(0, 1, 1)
	l.setWidth(150)
	if d := l.delay(100, 1); d != 50 {
		t.Errorf("delay after widening = %d, want 50", d)
	}
	l.setWidth(50)
	if d := l.delay(100, 1); d != 0 {
		t.Errorf("delay after narrowing = %d, want 0", d)
	}
}

// The log agrees with a brute-force count for random weights and instants.
func TestSlidingLogAgreesWithBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n, w := 1+rng.IntN(30), int64(1+rng.IntN(50))
		l := newSlidingLog(n, w)
		type call struct {
			t int64
			w int
		}
		var calls []call
		now := int64(0)
		for k := range 60 {
			now += int64(rng.IntN(8))
			c := 1 + rng.IntN(n)
			d := l.delay(now, c)
			// Brute force: the earliest t >= now at which the calls in
			// (t-w, t] weigh at most n-c.
			want := int64(-1)
			for t2 := now; want < 0; t2++ {
				held := 0
				for _, x := range calls {
					if x.t > t2-w {
						held += x.w
					}
				}
				if held+c <= n {
					want = t2 - now
				}
			}
			if d != want {
				t.Fatalf("trial %d call %d: delay(%d, %d) = %d, brute force %d", trial, k, now, c, d, want)
			}
			now += d
			l.record(now, c, uint64(k+1))
			calls = append(calls, call{now, c})
		}
	}
}

func TestSlidingCounterSteps(t *testing.T) {
	// 4 per 100 in buckets of 10 (10 buckets).
	c := newSlidingCounter(4, 100, 10)
	if c.g != 10 {
		t.Fatalf("bucket width = %d, want 10", c.g)
	}
	runWindowSteps(t, "4/100 counter", c, []step{
		{at: 5}, {at: 6}, {at: 15}, {at: 25},
		// Full. Bucket 0 ([0,10)) stops overlapping (t-100, t] at t = 10+100-1 = 109,
		// although the exact log would admit at 105: the counter pays up to one bucket.
		{at: 50, wait: 59},
		{at: 108, wait: 1},
		{at: 109}, // bucket 0 held two calls: two fit
		{at: 109},
		{at: 109, wait: 10}, // now bucket 1 ([10,20)) must leave: at 119
		{at: 119},
	})
	w := newSlidingCounter(10, 100, 10)
	runWindowSteps(t, "cost 10/100 counter", w, []step{
		{at: 5, w: 6}, {at: 15, w: 4},
		{at: 20, w: 5, wait: 89}, // the 6 in bucket 0 must leave, at 109
		{at: 109, w: 5},
	})
	w.adjust(0, 15, 4, 0) // the call at 15 cost nothing after all
	if got := w.used(109); got != 5 {
		t.Errorf("used after adjust = %d, want 5", got)
	}
}

func TestSlidingCounterNeverOverN(t *testing.T) {
	// Greedy calls at every instant they are allowed: an exact count over
	// every true window must never exceed n.
	const n, w = 7, 1000
	c := newSlidingCounter(n, w, 16)
	var calls []int64
	now := int64(0)
	for len(calls) < 500 {
		if d := c.delay(now, 1); d > 0 {
			now += d
			continue
		}
		c.record(now, 1, 0)
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
		if c.delay(now, 1) == 0 {
			c.record(now, 1, 0)
		}
	}
	if len(c.idx) > counterBuckets+2 {
		t.Errorf("counter holds %d buckets, want at most %d", len(c.idx), counterBuckets+2)
	}
	c.setWidth(int64(25 * time.Hour)) // a wider margin needs a few more
	if c.used(int64(2_000_000)*int64(100*time.Millisecond)) == 0 {
		t.Error("widening forgot the calls held")
	}
}

// A counter whose window is widened far past the one its buckets were cut
// for (a margin much wider than the window) merges buckets instead of
// growing its ring without bound, and still never holds more than n in a
// window: a merged bucket covers its calls, later than they leave.
func TestCounterWideMarginBoundedAndExact(t *testing.T) {
	const n, w = 5, int64(1000)
	c := newSlidingCounter(n, w, 8)
	var calls []int64
	now := int64(0)
	admit := func(now int64) {
		if c.delay(now, 1) == 0 {
			c.record(now, 1, 0)
			calls = append(calls, now)
		}
	}
	for ; now < 3000; now += 37 {
		admit(now)
	}
	c.setWidth(w * 1000) // a margin of 999 windows
	if len(c.idx) > 2*8+2 {
		t.Fatalf("ring of %d buckets after widening, want at most %d", len(c.idx), 2*8+2)
	}
	for ; now < 3_000_000; now += 997 {
		admit(now)
	}
	c.setWidth(w) // narrower again: the coarse buckets stay, still safe
	for ; now < 6_000_000; now += 13 {
		admit(now)
	}
	for i := range calls {
		j := i + n
		if j < len(calls) && calls[j]-calls[i] < w {
			t.Fatalf("calls %d and %d at %d and %d: %d calls within %d", i, j, calls[i], calls[j], n+1, w)
		}
	}
	if len(calls) < 20 {
		t.Errorf("only %d calls admitted: the counter stopped admitting", len(calls))
	}
}
