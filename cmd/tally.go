package cmd

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/pace-cli/pace/internal/summary"
	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// maxFailedItems is how many failed items the summary names; past that it
// only counts them.
const maxFailedItems = 100

// tally counts what the pool reports, for the progress display and the
// summary. It is safe for concurrent use.
type tally struct {
	mu           sync.Mutex
	ok, failed   int64
	retried      int64 // items with more than one attempt
	attempts     int64
	notStarted   int64 // admitted attempts that could not start (resources)
	itemsStarted int64 // items whose first attempt started, or that failed before
	running      int
	peakRunning  int
	durations    durations
	failedItems  []summary.FailedItem
	statuses     map[int]int64 // HTTP responses by status, every attempt
	noResponse   int64
	conns        map[string]int64 // attempts without a response, by cause
	bytes        int64            // body bytes kept
	// recent holds the latest admissions, as many as the largest rule's N
	// (up to maxRecent), so that the ETA can replay each rule's window.
	recent     []throttle.Call
	recentNext int
	keep       int
	costSum    int64
}

// maxRecent bounds the admissions a tally remembers for the ETA.
const maxRecent = 1 << 16

// newTally returns a tally that remembers enough admissions to replay
// rules' windows.
func newTally(rules []throttle.Rule) *tally {
	t := &tally{}
	for _, r := range rules {
		t.keep = max(t.keep, min(r.N, maxRecent))
	}
	return t
}

// seed counts earlier runs' admissions (a job log's) among the recent
// ones, oldest first, so that the ETA replays the windows they still
// fill: a resumed run waits for them as the backend does.
func (t *tally) seed(calls []throttle.Call) {
	if t.keep == 0 || len(calls) == 0 {
		return
	}
	calls = slices.SortedFunc(slices.Values(calls), func(a, b throttle.Call) int { return a.At.Compare(b.At) })
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range calls[max(len(calls)-t.keep, 0):] {
		if len(t.recent) < t.keep {
			t.recent = append(t.recent, c)
		} else {
			t.recent[t.recentNext] = c
			t.recentNext = (t.recentNext + 1) % t.keep
		}
	}
}

// earlierCalls returns the admissions of the earlier runs in jl, the job
// log, if any.
func earlierCalls(jl *jobLog) []throttle.Call {
	if jl == nil {
		return nil
	}
	calls := make([]throttle.Call, len(jl.earlier.Entries))
	for i, e := range jl.earlier.Entries {
		calls[i] = throttle.Call{At: e.Start, Cost: e.Cost()}
	}
	return calls
}

// observe counts one event.
func (t *tally) observe(ev runner.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev.Kind {
	case runner.JobStarted:
		t.attempts++
		if ev.Job.Attempt == 1 {
			t.itemsStarted++
		} else if ev.Job.Attempt == 2 {
			t.retried++
		}
		t.running = ev.InFlight
		t.peakRunning = max(t.peakRunning, t.running)
		t.costSum += int64(ev.Admission.Cost)
		if t.keep > 0 {
			c := throttle.Call{At: ev.Admission.At, Cost: ev.Admission.Cost}
			if len(t.recent) < t.keep {
				t.recent = append(t.recent, c)
			} else {
				t.recent[t.recentNext] = c
				t.recentNext = (t.recentNext + 1) % t.keep
			}
		}
	case runner.JobNotStarted:
		t.attempts--
		t.notStarted++
		if ev.Job.Attempt == 1 {
			t.itemsStarted--
		}
		t.running = ev.InFlight
	case runner.JobFinished:
		t.running = ev.InFlight
		t.durations.add(ev.Result.Runtime)
		if h := ev.Result.HTTP; h != nil {
			switch {
			case h.StatusCode != 0:
				if t.statuses == nil {
					t.statuses = map[int]int64{}
				}
				t.statuses[h.StatusCode]++
			default:
				t.noResponse++
				if h.Conn != "" {
					if t.conns == nil {
						t.conns = map[string]int64{}
					}
					t.conns[h.Conn]++
				}
			}
			t.bytes += h.Bytes
		}
	case runner.JobDone:
		if ev.Result.Start.IsZero() { // never started: it still leaves the queue
			t.itemsStarted++
		}
	}
}

// done counts an item's final result, once its output has been handled.
// show is how an item may be shown (credentials redacted).
func (t *tally) done(r *runner.Result, show func(string) string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.OK() {
		t.ok++
		return
	}
	t.failed++
	if len(t.failedItems) < maxFailedItems {
		t.failedItems = append(t.failedItems, summary.FailedItem{Seq: r.Job.Seq, Item: show(r.Job.Item), Status: shownStatus(&r.Job, r.Status())})
	}
}

// inFlight returns the number of jobs running.
func (t *tally) inFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running
}

// snapshot returns the counts now.
func (t *tally) snapshot() tallySnapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := tallySnapshot{
		OK: t.ok, Failed: t.failed, Retried: t.retried, Attempts: t.attempts, NotStarted: t.notStarted,
		ItemsStarted: t.itemsStarted, Running: t.running, PeakRunning: t.peakRunning,
		P50: t.durations.quantile(0.50), P95: t.durations.quantile(0.95), Max: t.durations.max,
		FailedItems: slices.Clone(t.failedItems), NoResponse: t.noResponse, Bytes: t.bytes,
		HTTP:   t.statuses != nil || t.noResponse > 0,
		Recent: slices.Clone(t.recent),
	}
	if t.attempts > 0 {
		s.MeanCost = int(t.costSum / t.attempts)
	}
	if t.statuses != nil {
		s.Statuses = make(map[string]int64, len(t.statuses))
		for c, n := range t.statuses {
			s.Statuses[strconv.Itoa(c)] = n
		}
	}
	if t.conns != nil {
		s.Conns = make(map[string]int64, len(t.conns))
		for c, n := range t.conns {
			s.Conns[c] = n
		}
	}
	return s
}

// exactSamples is how many durations are kept exactly; past that they go
// into logarithmic buckets, so memory stays bounded on endless input.
const exactSamples = 10000

// bucketBase is the ratio between bucket bounds: quantiles past
// exactSamples are within 1% of the truth.
const bucketBase = 1.01

// durations collects job durations for quantiles in bounded memory.
type durations struct {
	exact   []time.Duration
	buckets map[int]int64 // bucket index -> count, once exact overflowed
	n       int64
	max     time.Duration
}

// add records one duration.
func (d *durations) add(x time.Duration) {
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

// quantile returns the q-quantile (0 < q <= 1) by nearest rank, or 0
// without samples.
func (d *durations) quantile(q float64) time.Duration {
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
