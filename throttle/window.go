package throttle

// A window keeps the admissions of one rule and answers how long a caller
// must wait before one more call fits. Times are int64 nanoseconds on the
// limiter's own monotonic timeline; callers pass non-decreasing instants.
// Implementations are not safe for concurrent use: the limiter's mutex
// guards them.
type window interface {
	// delay returns how long after now one more call fits, 0 if it fits now.
	delay(now int64) int64
	// record adds a call at now. It requires delay(now) == 0.
	record(now int64)
	// count returns how many calls the window holds at now.
	count(now int64) int
}

// slidingLog is the exact log of one rule: a ring holding the times of the
// last n calls. One more call fits at now when the oldest of n calls has
// left (now-w, now], that is when oldest <= now-w.
//
// The ring grows on demand up to n entries, so a rule that is rarely hit
// costs little; once full it never allocates again.
type slidingLog struct {
	n     int
	w     int64
	buf   []int64 // ring of call times; len(buf) <= n
	start int     // index of the oldest call in buf
	stale int     // how many of the oldest calls are known to be out of the window
}

func newSlidingLog(n int, w int64) *slidingLog {
	return &slidingLog{n: n, w: w}
}

// at returns the i-th oldest call time. Requires i < len(l.buf).
func (l *slidingLog) at(i int) int64 {
	i += l.start
	if i >= len(l.buf) {
		i -= len(l.buf)
	}
	return l.buf[i]
}

// advance marks calls that have left the window at now as stale. Since now
// never decreases, the stale prefix only grows: amortized O(1).
func (l *slidingLog) advance(now int64) {
	for l.stale < len(l.buf) && l.at(l.stale) <= now-l.w {
		l.stale++
	}
}

func (l *slidingLog) delay(now int64) int64 {
	if len(l.buf) < l.n {
		return 0
	}
	// The log is full: the next call fits once the oldest has left.
	if d := l.at(0) + l.w - now; d > 0 {
		return d
	}
	return 0
}

func (l *slidingLog) record(now int64) {
	l.advance(now)
	if len(l.buf) < l.n {
		if len(l.buf) == cap(l.buf) {
			// Grow by doubling, but never past n: a full log holds exactly n.
			grown := make([]int64, len(l.buf), min(max(2*cap(l.buf), 16), l.n))
			copy(grown, l.buf)
			l.buf = grown
		}
		l.buf = append(l.buf, now)
		return
	}
	// Full: overwrite the oldest, which delay(now) == 0 says is stale.
	l.buf[l.start] = now
	l.start++
	if l.start == len(l.buf) {
		l.start = 0
	}
	if l.stale > 0 {
		l.stale--
	}
}

func (l *slidingLog) count(now int64) int {
	l.advance(now)
	return len(l.buf) - l.stale
}
