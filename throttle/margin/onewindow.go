package margin

import (
	"math"
	"slices"
	"time"
)

// The one window, in blocks.
//
// Where a group holds every sample (a rule that does not bind, the case of
// pace fetch under a generous limit), every observation asks the same of
// all the samples kept, up to maxLagSamples: the least and latest lags,
// and, for each call, the least of a lag plus admission over it and the
// calls after it (a suffix minimum), less its own admission. Asked
// sample by sample that is a pass over a thousand samples a call, a tenth
// of pace fetch's CPU. But only the calls under way and those after the
// first of them change from one observation to the next; the samples
// before, all ended, are summarised once, blockSize at a time, and a
// block answers for any suffix minimum coming from its right in a binary
// search: its own suffix minima rise from left to right, so those below
// the incoming one are its own (their best is a prefix maximum), and the
// rest take the incoming one, best at the block's first admission above
// them. A block is built when all its samples have ended, and dropped
// (with every block after it) when a sample at or before its end changes
// (changed); the latest bounds, which subtract the tracker's cut, are
// rebuilt when the cut has moved. TestTrackerMatchesReference checks the
// margins against the plain recomputation.

// blockSize is the samples a block summarises.
const blockSize = 32

// block summarises blockSize ended samples. An observation reads every
// block's first two cache lines, the figures before the arrays; the
// arrays only when a suffix minimum coming from its right falls inside it
// (blockMost), and when it is built. Between two observations the fetches
// and their answers push the blocks out of the caches, so the lines read
// are what an observation costs.
type block struct {
	at0                      int64 // the admission of the block's first sample
	minLo, maxLo, maxStretch time.Duration
	// arrA is the latest arrival (hiOf + at) in the block, overA the most
	// by which one arrived after a later one's admission (overtaken);
	// math.MaxInt64 where a latest bound is not known. Both computed with
	// the cut cut.
	arrA, overA int64
	cut         time.Duration
	// sufB, preB, sufA and preA at their ends: sufX[0], sufX[blockSize-1]
	// and preX[blockSize-1].
	firstB, lastB, mostB int64
	firstA, lastA, mostA int64
	_                    [3]int64 // the figures fill two cache lines
	// sufB[k] is the least lo + at over samples k.. of the block; preB[k]
	// the most of sufB[i] - at over i <= k. sufA and preA are the same for
	// the latest bound plus admission (hiOf + at; none where hi is not
	// known), computed with the cut cut.
	sufB, preB [blockSize]int64
	sufA, preA [blockSize]int64
}

// runMost is blockMost over the soonest bounds (sufB, preB), reading the
// arrays only if x falls inside the block.
func (b *block) runMost(seg []lagSample, x int64) time.Duration {
	if x >= b.lastB {
		return time.Duration(b.mostB)
	}
	return blockMost(&b.sufB, &b.preB, seg, x)
}

// boundMost is runMost over the latest bounds (sufA, preA).
func (b *block) boundMost(seg []lagSample, x int64) time.Duration {
	if x >= b.lastA {
		return time.Duration(b.mostA)
	}
	return blockMost(&b.sufA, &b.preA, seg, x)
}

// spans builds the blocks it can and splits live, the end of m.samples,
// into a head read sample by sample (first to headEnd), the blocks fb to
// lb-1, and a tail (tailStart to end) read sample by sample.
func (m *tracker) spans(live []lagSample) (first, headEnd, fb, lb, tailStart, end int) {
	m.buildBlocks()
	first, end = len(m.samples)-len(live), len(m.samples)
	fb = (first + blockSize - 1) / blockSize // the first block wholly in live
	lb = m.built / blockSize                 // after the last block built
	headEnd, tailStart = end, end
	if fb < lb {
		headEnd, tailStart = fb*blockSize, lb*blockSize
	} else {
		fb, lb = 0, 0
	}
	return first, headEnd, fb, lb, tailStart, end
}

// none stands for a minimum over nothing.
const none = math.MaxInt64

// changed says that the samples from index i on have changed: the blocks
// that hold them are dropped.
func (m *tracker) changed(i int) {
	m.built = min(m.built, i/blockSize*blockSize)
}

// buildBlocks summarises the samples after m.built, a block at a time,
// while a whole block of them has ended.
func (m *tracker) buildBlocks() {
	for m.built+blockSize <= len(m.samples) {
		seg := m.samples[m.built : m.built+blockSize]
		for i := range seg {
			if seg[i].pending {
				return
			}
		}
		bi := m.built / blockSize
		if bi == len(m.blocks) {
			m.blocks = append(m.blocks, block{})
		}
		b := &m.blocks[bi]
		b.minLo, b.maxLo, b.maxStretch = unknownLag, 0, 0
		suffix := int64(none)
		for k := blockSize - 1; k >= 0; k-- {
			s := &seg[k]
			b.minLo, b.maxLo, b.maxStretch = min(b.minLo, s.lo), max(b.maxLo, s.lo), max(b.maxStretch, s.stretch)
			suffix = min(suffix, s.at+int64(s.lo))
			b.sufB[k] = suffix
		}
		prefixMost(&b.preB, &b.sufB, seg)
		b.at0, b.firstB, b.lastB, b.mostB = seg[0].at, suffix, b.sufB[blockSize-1], b.preB[blockSize-1]
		m.buildA(b, seg)
		m.built += blockSize
	}
}

// buildA computes b's latest bounds, with the tracker's cut.
func (m *tracker) buildA(b *block, seg []lagSample) {
	suffix := int64(none)
	for k := blockSize - 1; k >= 0; k-- {
		if s := &seg[k]; s.hi != unknownLag {
			suffix = min(suffix, int64(m.hiOf(s))+s.at)
		}
		b.sufA[k] = suffix
	}
	prefixMost(&b.preA, &b.sufA, seg)
	b.firstA, b.lastA, b.mostA = suffix, b.sufA[blockSize-1], b.preA[blockSize-1]
	b.arrA, b.overA = math.MinInt64, 0
	for k := range seg {
		s := &seg[k]
		if k > 0 {
			if b.arrA == math.MaxInt64 {
				b.overA = math.MaxInt64
			} else if b.overA != math.MaxInt64 {
				b.overA = max(b.overA, b.arrA-s.at)
			}
		}
		if s.hi == unknownLag {
			b.arrA = math.MaxInt64
		} else {
			b.arrA = max(b.arrA, int64(m.hiOf(s))+s.at)
		}
	}
	b.cut = m.cut
}

// prefixMost sets pre[k] to the most of suf[i] - seg[i].at over i <= k.
func prefixMost(pre, suf *[blockSize]int64, seg []lagSample) {
	most := int64(math.MinInt64)
	for k := range pre {
		most = max(most, suf[k]-seg[k].at)
		pre[k] = most
	}
}

// blockMost returns the most, over the samples k of a block (seg), of
// min(suf[k], x) - seg[k].at: suf rises with k, so below the first k
// whose suf exceeds x the most is pre's, and from it on x's at that k.
// x is not none.
func blockMost(suf, pre *[blockSize]int64, seg []lagSample, x int64) time.Duration {
	r := 0 // the first k with suf[k] > x
	switch {
	case x >= suf[blockSize-1]:
		r = blockSize
	case x >= suf[0]:
		lo, hi := 1, blockSize-1
		for lo < hi {
			if mid := int(uint(lo+hi) >> 1); suf[mid] <= x {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		r = lo
	}
	most := int64(math.MinInt64)
	if r > 0 {
		most = pre[r-1]
	}
	if r < blockSize {
		most = max(most, x-seg[r].at)
	}
	return time.Duration(most)
}

// oneWindow returns what lateLeast returns for live (most, least) and
// for the calls of live admitted from from on with upper set (bound),
// where a group holds every sample: no window is complete (but perhaps
// the first call's), so the lower pass has one window, the first call's,
// and the upper pass counts, for each call, the calls after it (see
// trailing). One pass from the newest call back does both, after one that
// finds the least lag and m.underWay. The suffixes' least, lag plus
// admission from a call on, is the same from whichever base it is
// counted, so it needs no base. live is the end of m.samples; the ended
// samples before the first under way are read from their blocks.
//
// The same pass returns over, the overtaken figure: the most, over the
// calls x admitted from from on, by which a call admitted before x had
// arrived at the latest after x's admission (upper bounds, as bound
// counts them; unknownLag if one is not known). It stands in for
// nthLatest where no window is complete, which it bounds from above
// together with bound: the Nth latest arrival of x's window and the calls
// before x is either the least of x's window (bound's figure) or no later
// than the latest of the calls before x (this one). Admissions rise with
// the index, so a call i counts only against the first x after it: over
// is the most of i's arrival less that x's admission, read on the way
// back with no pass of its own, and a block gives its own pairs (overA)
// and its latest arrival (arrA) against the x after it.
func (m *tracker) oneWindow(live []lagSample, from int64) (most, least, bound, over time.Duration) {
	first, headEnd, fb, lb, tailStart, end := m.spans(live)

	least = unknownLag
	var latest, stretched time.Duration
	under := 0 // calls under way
	ends := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if s := &m.samples[i]; s.pending {
				under++
			} else {
				least, latest, stretched = min(least, s.lo), max(latest, s.lo), max(stretched, s.stretch)
			}
		}
	}
	ends(first, headEnd)
	for bi := fb; bi < lb; bi++ {
		b := &m.blocks[bi]
		least, latest, stretched = min(least, b.minLo), max(latest, b.maxLo), max(stretched, b.maxStretch)
	}
	ends(tailStart, end)
	m.underWay = latest + m.floor + stretched

	fromAt, _ := slices.BinarySearchFunc(live, from, func(s lagSample, t int64) int {
		if s.at < t {
			return -1
		}
		return 1
	})
	fromAt += first // the first sample admitted from from on
	runFrom := first + under
	var (
		minSeen   int64 = none // the least lo + at over the calls seen
		firstSeen int64        // the admission of the first call seen
		suffix    int64 = none // the least lag + at from j on, a call under way's lag 0
		run             = time.Duration(math.MinInt64)
		upper     int64 = none // from from on: the least arrival (hi + at) from j on
		// over's: the call x that the calls before j count against
		next    int64 // the admission of the first x after j (if hasNext)
		hasNext bool
		lost    bool // a call with an x after it has no latest bound
	)
	// back scans the samples hi-1 down to lo one by one.
	back := func(lo, hi int) {
		for j := hi - 1; j >= lo; j-- {
			s := &m.samples[j]
			b, arr := s.at, int64(none) // arr: its arrival (hi + at), none if not known
			if s.pending {
				arr = int64(s.latency+m.underWay) + s.at
			} else {
				b += int64(s.lo)
				minSeen, firstSeen = min(minSeen, b), s.at
				if s.hi != unknownLag {
					arr = int64(m.hiOf(s)) + s.at
				}
			}
			if hasNext {
				if arr == none {
					lost = true
				} else {
					over = max(over, time.Duration(arr-next))
				}
			}
			suffix = min(suffix, b)
			if j >= runFrom {
				run = max(run, time.Duration(suffix-s.at))
			}
			if j >= fromAt {
				next, hasNext = s.at, true
				if upper = min(upper, arr); upper != none {
					bound = max(bound, time.Duration(upper-s.at))
				} else {
					bound = unknownLag
				}
			}
		}
	}
	back(tailStart, end)
	for bi := lb - 1; bi >= fb; bi-- {
		lo := bi * blockSize
		b, seg := &m.blocks[bi], m.samples[lo:lo+blockSize]
		if lo < runFrom || lo < fromAt || upper == none || suffix == none {
			back(lo, lo+blockSize) // a block in part, or one that ends the suffixes
			continue
		}
		m.blockHits++
		minSeen, firstSeen = min(minSeen, b.firstB), b.at0
		run = max(run, b.runMost(seg, suffix))
		suffix = min(suffix, b.firstB)
		if b.cut != m.cut {
			m.buildA(b, seg)
		}
		bound = max(bound, b.boundMost(seg, upper))
		upper = min(upper, b.firstA)
		// Every call of the block is an x: its own pairs are overA, and
		// its latest arrival counts against the call after it.
		switch {
		case b.overA == math.MaxInt64 || hasNext && b.arrA == math.MaxInt64:
			lost = true
		case hasNext:
			over = max(over, time.Duration(b.overA), time.Duration(b.arrA-next))
		default:
			over = max(over, time.Duration(b.overA))
		}
		next, hasNext = b.at0, true
	}
	back(first, headEnd)
	if n := len(live) - under; n > 0 {
		// As lateLeastOne: the window's least, then the last n calls'
		// suffixes, those under way included.
		most = max(0, time.Duration(minSeen-firstSeen), run)
	}
	if lost {
		over = unknownLag
	}
	return most, least, bound, over
}
