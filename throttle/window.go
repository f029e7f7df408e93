package throttle

// A window keeps the admissions of one rule and answers how long a caller
// must wait before a call of some weight fits. Times are int64 nanoseconds
// on the limiter's own timeline; callers pass non-decreasing instants.
// A call's weight is what it counts in the rule: 1 for a count rule, its
// cost for a cost rule. Implementations are not safe for concurrent use:
// the limiter's mutex guards them.
type window interface {
	// delay returns how long after now a call of weight w fits, 0 if it
	// fits now. It requires 1 <= w <= the rule's N.
	delay(now int64, w int) int64
	// record adds a call of weight w at now, identified by serial (which
	// grows with every call recorded), and returns the weight the window
	// then holds (used(now), without a second pass). It requires
	// delay(now, w) == 0, except for calls made before the limiter
	// existed (Seed).
	record(now int64, w int, serial uint64) int
	// used returns the weight the window holds at now.
	used(now int64) int
	// adjust makes to the weight of the call serial, recorded at instant
	// at, if the window still holds it. from is the weight the limiter
	// last recorded for the call: a window that keeps each call's weight
	// (the log) does not need it, one that keeps only sums (the counter)
	// adds to-from. A sum never drops below 0.
	adjust(serial uint64, at int64, from, to int)
	// setWidth changes the window's width (a margin that changed). Calls
	// already forgotten under a narrower width stay forgotten.
	setWidth(w int64)
}

// slidingLog is the exact log of one rule: a ring of the calls still in
// the window (t-w, t], each with its time, its serial and the cumulative
// weight up to it, so that the weight of any suffix of the log is one
// subtraction. One more call of weight c fits at now when the weight held
// plus c is at most n; otherwise the oldest calls must leave first, and
// the wait ends when the last of those has left.
//
// Every call weighs at least 1 and the log admits a call only when the
// weight it holds stays at most n, so it never holds more than n calls.
// The ring grows on demand up to that, so a rule that is rarely hit costs
// little; once grown it never allocates again.
type slidingLog struct {
	n     int
	w     int64
	buf   []logEntry // ring; len(buf) is its capacity
	start int        // index of the oldest call
	size  int        // calls held
	base  int64      // cumulative weight before the oldest call held
}

type logEntry struct {
	t      int64
	serial uint64
	cum    int64 // weight of every call recorded up to and including this one
}

func newSlidingLog(n int, w int64) *slidingLog {
	return &slidingLog{n: n, w: w}
}

// at returns the i-th oldest call. Requires i < l.size.
func (l *slidingLog) at(i int) *logEntry {
	i += l.start
	if i >= len(l.buf) {
		i -= len(l.buf)
	}
	return &l.buf[i]
}

// total returns the weight held.
func (l *slidingLog) total() int64 {
	if l.size == 0 {
		return 0
	}
	return l.at(l.size-1).cum - l.base
}

// advance drops the calls that have left the window at now. Since now
// never decreases, each call is dropped once: amortized O(1).
func (l *slidingLog) advance(now int64) {
	for l.size > 0 {
		e := l.at(0)
		if e.t > now-l.w {
			return
		}
		l.base = e.cum
		l.start++
		if l.start == len(l.buf) {
			l.start = 0
		}
		l.size--
	}
}

// room reports whether a call of weight w fits in what the window holds:
// after advance(now), delay(now, w) == 0.
func (l *slidingLog) room(w int) bool { return l.total()+int64(w) <= int64(l.n) }

func (l *slidingLog) delay(now int64, w int) int64 {
	l.advance(now)
	if l.room(w) {
		return 0
	}
	excess := l.total() + int64(w) - int64(l.n)
	// The oldest calls whose weights add up to excess must leave: find the
	// first call k with cum(k) - base >= excess. cum grows along the ring,
	// so a binary search finds it.
	lo, hi := 0, l.size-1
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if l.at(mid).cum-l.base >= excess {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if d := l.at(lo).t + l.w - now; d > 0 {
		return d
	}
	return 0 // unreachable after advance
}

func (l *slidingLog) record(now int64, w int, serial uint64) int {
	l.advance(now)
	if l.size == len(l.buf) {
		l.grow()
	}
	cum := l.base + int64(w)
	if l.size > 0 {
		cum = l.at(l.size-1).cum + int64(w)
	}
	l.size++
	*l.at(l.size - 1) = logEntry{t: now, serial: serial, cum: cum}
	return int(cum - l.base)
}

// grow makes room for one more call: doubling, and past n only when the
// log holds more than n calls, which only Seed can make it do.
func (l *slidingLog) grow() {
	c := min(max(2*len(l.buf), 16), l.n)
	if c <= len(l.buf) {
		c = 2*len(l.buf) + 1
	}
	grown := make([]logEntry, c)
	for i := range l.size {
		grown[i] = *l.at(i)
	}
	l.buf, l.start = grown, 0
}

func (l *slidingLog) used(now int64) int {
	l.advance(now)
	return int(l.total())
}

func (l *slidingLog) adjust(serial uint64, _ int64, _, to int) {
	// Serials grow along the ring: binary search for this one.
	lo, hi := 0, l.size
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if l.at(mid).serial < serial {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == l.size || l.at(lo).serial != serial {
		return // already left the window
	}
	prev := l.base
	if lo > 0 {
		prev = l.at(lo - 1).cum
	}
	// The log keeps the call's own weight: it becomes to, whatever the
	// caller last knew of it.
	d := max(int64(to), 0) - (l.at(lo).cum - prev)
	for i := lo; i < l.size; i++ {
		l.at(i).cum += d
	}
}

func (l *slidingLog) setWidth(w int64) { l.w = w }
