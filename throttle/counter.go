package throttle

// CounterAbove is the default size above which a rule is kept by a sliding
// window counter instead of an exact log: a rule with N > CounterAbove uses
// at most counterBuckets+2 small buckets instead of N timestamps.
const CounterAbove = 100_000

// counterBuckets is how many buckets a counter splits its window into. The
// counter's worst-case throughput loss is 1/(counterBuckets+1) < 0.1%.
const counterBuckets = 1024

// slidingCounter keeps one rule with bounded memory. The window is split
// into buckets of width g; a call counts in the bucket holding its time.
// The count at now is the sum of every bucket that overlaps (now-w, now],
// the oldest, partly covered one counted whole. Any true window is covered
// by the buckets the counter sums, so it never admits more than n calls in
// any window. The price is that a call leaves the count up to g later than
// it leaves the true window: throughput drops by at most g/(w+g).
type slidingCounter struct {
	n     int
	w, g  int64
	idx   []int64 // ring of bucket indexes, oldest at head
	cnt   []int   // counts, parallel to idx
	head  int
	size  int
	total int // sum of cnt over live buckets
}

func newSlidingCounter(n int, w int64, buckets int) *slidingCounter {
	g := (w + int64(buckets) - 1) / int64(buckets)
	if g < 1 {
		g = 1
	}
	// A window overlaps at most ceil(w/g)+1 buckets.
	slots := int((w+g-1)/g) + 2
	return &slidingCounter{n: n, w: w, g: g, idx: make([]int64, slots), cnt: make([]int, slots)}
}

// floorDiv divides rounding towards minus infinity (times may be negative
// after seeding from before the limiter's epoch).
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// evict drops buckets that no longer overlap (now-w, now].
func (c *slidingCounter) evict(now int64) {
	lo := floorDiv(now-c.w+1, c.g)
	for c.size > 0 && c.idx[c.head] < lo {
		c.total -= c.cnt[c.head]
		c.head = (c.head + 1) % len(c.idx)
		c.size--
	}
}

func (c *slidingCounter) delay(now int64) int64 {
	c.evict(now)
	if c.total < c.n {
		return 0
	}
	// Walk from the oldest bucket until enough calls have left. Bucket k
	// stops overlapping the window at t = (k+1)*g + w - 1.
	left := c.total
	for i := 0; i < c.size; i++ {
		j := (c.head + i) % len(c.idx)
		left -= c.cnt[j]
		if left < c.n {
			return (c.idx[j]+1)*c.g + c.w - 1 - now
		}
	}
	return 0 // unreachable: left reaches 0 < n
}

func (c *slidingCounter) record(now int64) {
	c.evict(now)
	k := floorDiv(now, c.g)
	if c.size > 0 {
		last := (c.head + c.size - 1) % len(c.idx)
		if c.idx[last] == k {
			c.cnt[last]++
			c.total++
			return
		}
	}
	// evict(now) left only buckets overlapping the window, fewer than
	// len(c.idx), so there is room for one more.
	j := (c.head + c.size) % len(c.idx)
	c.idx[j], c.cnt[j] = k, 1
	c.size++
	c.total++
}

func (c *slidingCounter) count(now int64) int {
	c.evict(now)
	return c.total
}
