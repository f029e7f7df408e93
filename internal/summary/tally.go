package summary

import (
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// MaxFailedItems is how many failed items the summary names; past that it
// only counts them.
const MaxFailedItems = 100

// MaxItemShown is the most bytes of a failed item's text, and of its
// status, that the summary names it with: items of up to 1 MiB, kept
// whole, made a summary of megabytes per failed item.
const MaxItemShown = 4 << 10

// cutShown returns s, or past MaxItemShown bytes its start and a note of
// its length.
func cutShown(s string) string {
	if len(s) <= MaxItemShown {
		return s
	}
	note := fmt.Sprintf("…(cut: %d bytes)", len(s))
	cut := MaxItemShown - len(note)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}

// Tally counts what the pool reports, for the progress display and the
// summary: Observe each event, Done each item's final result, and
// Snapshot the counts. It is safe for concurrent use.
type Tally struct {
	mu           sync.Mutex
	ok, failed   int64
	retried      int64 // items with more than one attempt
	attempts     int64
	notStarted   int64 // admitted attempts that could not start (resources)
	itemsStarted int64 // items whose first attempt started, or that failed before
	running      int
	peakRunning  int
	durations    Durations
	failedItems  []FailedItem
	http         HTTPCounts // responses, every attempt
	// recent holds the latest admissions, so that the ETA can replay
	// each rule's window.
	recent  Recent
	costSum int64
}

// NewTally returns a tally that remembers enough admissions to replay
// rules' windows.
func NewTally(rules []throttle.Rule) *Tally {
	return &Tally{recent: NewRecent(rules)}
}

// Seed counts earlier runs' admissions (a job log's) among the recent
// ones (Recent.Seed).
func (t *Tally) Seed(calls []throttle.Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recent.Seed(calls)
}

// Observe counts one event.
func (t *Tally) Observe(ev runner.Event) {
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

// Done counts an item's final result, once its output has been handled.
// For a failed item among the first MaxFailedItems, show returns how the
// summary names it (credentials redacted); it is called with the tally
// locked, so it must not call the tally.
func (t *Tally) Done(r *runner.Result, show func(*runner.Result) FailedItem) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.OK() {
		t.ok++
		return
	}
	t.failed++
	if len(t.failedItems) < MaxFailedItems {
		fi := show(r)
		fi.Item, fi.Status = cutShown(fi.Item), cutShown(fi.Status)
		t.failedItems = append(t.failedItems, fi)
	}
}

// NotKept takes back n body bytes counted when their attempt ended, that
// then went nowhere (stdout could not be written).
func (t *Tally) NotKept(n int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.http.bytes -= n
}

// ItemsStarted returns the number of items whose first attempt started,
// or that failed before.
func (t *Tally) ItemsStarted() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.itemsStarted
}

// InFlight returns the number of jobs running.
func (t *Tally) InFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running
}

// Snapshot returns the counts now.
func (t *Tally) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Snapshot{
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
