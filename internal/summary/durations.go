package summary

import (
	"math"
	"slices"
	"time"
)

// exactSamples is how many durations are kept exactly; past that they go
// into logarithmic buckets, so memory stays bounded on endless input.
const exactSamples = 10000

// bucketBase is the ratio between bucket bounds: quantiles past
// exactSamples are within 1% of the truth.
const bucketBase = 1.01

// Durations collects job durations for quantiles in bounded memory: the
// first exactSamples exactly, then in logarithmic buckets within 1% of the
// truth. The zero value is empty and ready; it is not safe for concurrent
// use.
type Durations struct {
	exact   []time.Duration
	buckets map[int]int64 // bucket index -> count, once exact overflowed
	n       int64
	max     time.Duration
}

// Add records one duration; a negative one (a clock step) counts as 0.
func (d *Durations) Add(x time.Duration) {
	x = max(x, 0)
	d.n++
	d.max = max(d.max, x)
	if d.buckets == nil && len(d.exact) < exactSamples {
		d.exact = append(d.exact, x)
		return
	}
	if d.buckets == nil {
		d.buckets = make(map[int]int64)
		for _, e := range d.exact {
			d.buckets[bucketOf(e)]++
		}
		d.exact = nil
	}
	d.buckets[bucketOf(x)]++
}

// bucketOf is the bucket of x; -1 for 0 and less.
func bucketOf(x time.Duration) int {
	if x <= 0 {
		return -1
	}
	return int(math.Floor(math.Log(float64(x)) / math.Log(bucketBase)))
}

// bucketValue is the middle of bucket i.
func bucketValue(i int) time.Duration {
	if i < 0 {
		return 0
	}
	return time.Duration(math.Pow(bucketBase, float64(i)+0.5))
}

// Quantile returns the q-quantile (0 < q <= 1) by nearest rank, or 0
// without samples.
func (d *Durations) Quantile(q float64) time.Duration {
	if d.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(d.n)))
	rank = min(max(rank, 1), d.n)
	if d.buckets == nil {
		s := slices.Clone(d.exact)
		slices.Sort(s)
		return s[rank-1]
	}
	keys := make([]int, 0, len(d.buckets))
	for k := range d.buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var seen int64
	for _, k := range keys {
		seen += d.buckets[k]
		if seen >= rank {
			return min(bucketValue(k), d.max)
		}
	}
	return d.max
}

// Max returns the longest duration recorded, or 0.
func (d *Durations) Max() time.Duration { return d.max }
