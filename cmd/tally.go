package cmd

import (
	"slices"
	"sync"

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
	durations    summary.Durations
	failedItems  []summary.FailedItem
	http         summary.HTTPCounts // responses, every attempt
	// recent holds the latest admissions, so that the ETA can replay
	// each rule's window.
	recent  summary.Recent
	costSum int64
}

// newTally returns a tally that remembers enough admissions to replay
// rules' windows.
func newTally(rules []throttle.Rule) *tally {
	return &tally{recent: summary.NewRecent(rules)}
}

// seed counts earlier runs' admissions (a job log's) among the recent
// ones (summary.Recent.Seed).
func (t *tally) seed(calls []throttle.Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recent.Seed(calls)
}

// earlierCalls returns the admissions of the earlier runs in jl, the job
// log, if any.
func earlierCalls(jl *jobLog) []throttle.Call {
	if jl == nil {
		return nil
	}
	return jl.earlier.Calls()
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
		t.recent.Add(throttle.Call{At: ev.Admission.At, Cost: ev.Admission.Cost})
	case runner.JobNotStarted:
		t.attempts--
		t.notStarted++
		if ev.Job.Attempt == 1 {
			t.itemsStarted--
		}
		t.running = ev.InFlight
	case runner.JobFinished:
		t.running = ev.InFlight
		t.durations.Add(ev.Result.Runtime)
		if h := ev.Result.HTTP; h != nil {
			t.http.Add(h)
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
func (t *tally) snapshot() summary.Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := summary.Snapshot{
		OK: t.ok, Failed: t.failed, Retried: t.retried, Attempts: t.attempts, NotStarted: t.notStarted,
		ItemsStarted: t.itemsStarted, Running: t.running, PeakRunning: t.peakRunning,
		P50: t.durations.Quantile(0.50), P95: t.durations.Quantile(0.95), Max: t.durations.Max(),
		FailedItems: slices.Clone(t.failedItems), Recent: t.recent.Calls(),
	}
	t.http.Fill(&s)
	if t.attempts > 0 {
		s.MeanCost = int(t.costSum / t.attempts)
	}
	return s
}
