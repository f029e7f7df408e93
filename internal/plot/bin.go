package plot

// A binner maps instants in [0, span] to n equal bins, one per pixel
// column of the plot area. Bin b holds the instants t with
// floor(t*n/span) == b; span itself falls in the last bin.
type binner struct {
	n     int
	scale float64 // n / span
}

func newBinner(n int, span int64) binner {
	return binner{n: n, scale: float64(n) / float64(span)}
}

// of returns the bin of instant at, clamped to [0, n-1]. It is
// nondecreasing in at, which binFold relies on.
func (b binner) of(at int64) int {
	i := int(float64(at) * b.scale)
	return min(max(i, 0), b.n-1)
}

// A binFold reduces a right-continuous step function of time, given as
// the value it takes from each of a sequence of instants on, to its
// largest value within each bin. Taking the maximum, not a mean or a
// sample, means a peak narrower than a bin still shows in full.
type binFold struct {
	bins binner
	end  int64   // the last instant of the axis; later values are dropped
	max  []int64 // per bin, once finish has run
	cur  int64   // the value since the last set
	next int     // the first bin not yet given a value
}

func newBinFold(bins binner, end int64) *binFold {
	return &binFold{bins: bins, end: end, max: make([]int64, bins.n)}
}

// set records that the function takes the value v from instant at on.
// It requires at nondecreasing from one call to the next, and at >= 0.
func (f *binFold) set(at, v int64) {
	if at > f.end {
		return
	}
	b := f.bins.of(at)
	for ; f.next < b; f.next++ {
		f.max[f.next] = f.cur // no change within the bin: cur throughout
	}
	if f.next == b {
		// The first change within bin b. Unless it is at the bin's
		// first instant, the bin starts with the value before it.
		if at > 0 && f.bins.of(at-1) == b {
			f.max[b] = f.cur
		} else {
			f.max[b] = v
		}
		f.next = b + 1
	}
	f.max[b] = max(f.max[b], v)
	f.cur = v
}

// finish gives the bins after the last change the last value, and
// returns the per-bin maxima.
func (f *binFold) finish() []int64 {
	for ; f.next < len(f.max); f.next++ {
		f.max[f.next] = f.cur
	}
	return f.max
}
