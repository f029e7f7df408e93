package throttle

// counterBuckets is how many buckets a counter splits its window into. The
// counter's worst-case throughput loss is 1/(counterBuckets+1) < 0.1%.
const counterBuckets = 1024

// slidingCounter keeps one rule with bounded memory. The window is split
// into buckets of width g; a call adds its weight to the bucket holding its
// time. The weight held at now is the sum of every bucket that overlaps
// (now-w, now], the oldest, partly covered one counted whole. Any true
// window is covered by the buckets the counter sums, so it never admits
// more than n in any window. The price is that a call leaves the count up
// to g later than it leaves the true window: throughput drops by at most
// g/(w+g).
type slidingCounter struct {
	n     int
	w, g  int64
	nb    int     // the buckets g was chosen for
	idx   []int64 // ring of bucket indexes, oldest at head
	cnt   []int64 // weights, parallel to idx
	head  int
	size  int
	total int64 // sum of cnt over live buckets
}

func newSlidingCounter(n int, w int64, buckets int) *slidingCounter {
	g := (w + int64(buckets) - 1) / int64(buckets)
	if g < 1 {
		g = 1
	}
	c := &slidingCounter{n: n, w: w, g: g, nb: buckets}
	c.idx, c.cnt = make([]int64, c.slots()), make([]int64, c.slots())
	return c
}

// slots is the ring size the window needs: a window overlaps at most
// ceil(w/g)+1 buckets, and one more is being filled.
func (c *slidingCounter) slots() int { return int((c.w+c.g-1)/c.g) + 2 }

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

// room reports whether a call of weight w fits in what the window holds:
// after evict(now), delay(now, w) == 0.
func (c *slidingCounter) room(w int) bool { return c.total+int64(w) <= int64(c.n) }

func (c *slidingCounter) delay(now int64, w int) int64 {
	c.evict(now)
	if c.room(w) {
		return 0
	}
	// Walk from the oldest bucket until enough weight has left. Bucket k
	// stops overlapping the window at t = (k+1)*g + w - 1.
	left := c.total
	for i := 0; i < c.size; i++ {
		j := (c.head + i) % len(c.idx)
		left -= c.cnt[j]
		if left+int64(w) <= int64(c.n) {
			return (c.idx[j]+1)*c.g + c.w - 1 - now
		}
	}
	return 0 // unreachable: left reaches 0 and w <= n
}

func (c *slidingCounter) record(now int64, w int, _ uint64) int {
	c.evict(now)
	k := floorDiv(now, c.g)
	if c.size > 0 {
		last := (c.head + c.size - 1) % len(c.idx)
		if c.idx[last] == k {
			c.cnt[last] += int64(w)
			c.total += int64(w)
			return int(c.total)
		}
	}
	// evict(now) left only buckets overlapping the window, fewer than
	// len(c.idx), so there is room for one more.
	j := (c.head + c.size) % len(c.idx)
	c.idx[j], c.cnt[j] = k, int64(w)
	c.size++
	c.total += int64(w)
	return int(c.total)
}

func (c *slidingCounter) used(now int64) int {
	c.evict(now)
	return int(c.total)
}

func (c *slidingCounter) adjust(_ uint64, at int64, from, to int) {
	k, delta := floorDiv(at, c.g), to-from
	for i := 0; i < c.size; i++ {
		j := (c.head + i) % len(c.idx)
		if c.idx[j] == k {
			d := max(int64(delta), -c.cnt[j])
			c.cnt[j] += d
			c.total += d
			return
		}
	}
}

// setWidth keeps the bucket width and grows the ring if the wider window
// overlaps more buckets. A window widened to more than twice the buckets
// its width was chosen for (a margin far wider than the window) merges
// buckets instead, k into one, so that the ring stays that small: a call
// then leaves the count up to k bucket widths late, never early.
func (c *slidingCounter) setWidth(w int64) {
	c.w = w
	if c.slots() > 2*c.nb+2 {
		c.coarsen(int64((c.slots() - 2 + c.nb - 1) / c.nb))
	}
	if need := c.slots(); need > len(c.idx) {
		idx, cnt := make([]int64, need), make([]int64, need)
		for i := 0; i < c.size; i++ {
			j := (c.head + i) % len(c.idx)
			idx[i], cnt[i] = c.idx[j], c.cnt[j]
		}
		c.idx, c.cnt, c.head = idx, cnt, 0
	}
}

// coarsen makes buckets k times wider, merging the live ones: bucket i
// becomes floor(i/k), which covers it.
func (c *slidingCounter) coarsen(k int64) {
	if k <= 1 {
		return
	}
	size := 0
	for i := 0; i < c.size; i++ {
		j := (c.head + i) % len(c.idx)
		b, n := floorDiv(c.idx[j], k), c.cnt[j]
		if size > 0 {
			if last := (c.head + size - 1) % len(c.idx); c.idx[last] == b {
				c.cnt[last] += n
				continue
			}
		}
		t := (c.head + size) % len(c.idx)
		c.idx[t], c.cnt[t] = b, n
		size++
	}
	c.size = size
	c.g *= k
}
