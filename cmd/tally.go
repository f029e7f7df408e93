package cmd

import (
	"sync"
	"time"

	"github.com/pace-cli/pace/runner"
)

// tally counts what the pool reports, for the bar and the summary. It is
// safe for concurrent use.
type tally struct {
	mu           sync.Mutex
	ok, failed   int64
	retried      int64 // items with more than one attempt
	attempts     int64
	itemsStarted int64 // items whose first attempt started
	running      int
	peakRunning  int
	runtimeSum   time.Duration
	runtimeN     int64
	durations    durations
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
	case runner.JobFinished:
		t.running = ev.InFlight
		t.durations.add(ev.Result.Runtime)
		t.runtimeSum += ev.Result.Runtime
		t.runtimeN++
	case runner.JobDone:
		if ev.Result.OK() {
			t.ok++
		} else {
			t.failed++
		}
		if ev.Result.Start.IsZero() { // never started: it still leaves the queue
			t.itemsStarted++
		}
	}
}

// inFlight returns the number of jobs running.
func (t *tally) inFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running
}

// progress returns the items started (or failed before starting), the
// jobs running and the mean runtime so far.
func (t *tally) progress() (started int64, inFlight int, mean time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.runtimeN > 0 {
		mean = t.runtimeSum / time.Duration(t.runtimeN)
	}
	return t.itemsStarted, t.running, mean
}

// summary returns the counts as a Summary, without the rules.
func (t *tally) summary(jobs int, elapsed time.Duration) *Summary {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &Summary{
		OK: t.ok, Failed: t.failed, Retried: t.retried, Attempts: t.attempts,
		Elapsed: elapsed, PeakInFlight: t.peakRunning, Jobs: jobs,
		P50: t.durations.quantile(0.50), P95: t.durations.quantile(0.95), Max: t.durations.max,
	}
	if elapsed > 0 {
		s.Rate = float64(t.attempts) / elapsed.Seconds()
	}
	return s
}
