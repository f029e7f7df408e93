package adapt

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/runner"
	"github.com/pace-cli/pace/throttle"
)

// TestObserve: a job that left late widens the backend's margin, and
// Observe says so with the lag; one that never sent its call
// is forgotten, and moves nothing.
func TestObserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rules := []throttle.Rule{{N: 5, Window: time.Second}}
		b, err := throttle.New(throttle.Options{Rules: rules})
		if err != nil {
			t.Fatal(err)
		}
		m := New(b, 10*time.Millisecond, 10*time.Millisecond, rules)
		if got := b.Stats().Margin; got != 10*time.Millisecond {
			t.Fatalf("margin at the start = %v, want the floor 10ms", got)
		}
		job := func(seq int64, lag time.Duration, sent bool) (time.Duration, time.Duration, bool) {
			at := time.Now()
			m.Observe(runner.Event{Kind: runner.JobStarted, Job: runner.Job{Seq: seq}, Admission: throttle.Admission{At: at}})
			time.Sleep(lag + 10*time.Millisecond)
			res := &runner.Result{Job: runner.Job{Seq: seq}, Start: at, Lag: lag, Runtime: lag + 10*time.Millisecond}
			if sent {
				res.Sent = at.Add(lag)
			}
			return m.Observe(runner.Event{Kind: runner.JobFinished, Result: res})
		}
		if now, lag, moved := job(1, 200*time.Millisecond, false); moved || now != 0 || lag != 0 {
			t.Errorf("a job that sent nothing: %v, %v, %v; want nothing moved", now, lag, moved)
		}
		if got := b.Stats().Margin; got != 10*time.Millisecond {
			t.Errorf("margin after a job that sent nothing = %v, want 10ms still", got)
		}
		// The margin covers when a call may have arrived, from its
		// admission: its lag and the floor it is trusted to arrive
		// within (the next call may leave at once).
		if now, _, moved := job(2, 2*time.Millisecond, true); !moved || now != 12*time.Millisecond {
			t.Errorf("a job 2ms late: margin %v, moved %v; want 2ms + 10ms, moved", now, moved)
		}
		now, lag, moved := job(3, 200*time.Millisecond, true)
		if !moved || lag != 200*time.Millisecond || now != 210*time.Millisecond || b.Stats().Margin != now {
			t.Errorf("a job 200ms late after one 2ms late: %v, %v, %v (backend's margin %v); want the margin widened to 200ms + 10ms and set",
				now, lag, moved, b.Stats().Margin)
		}
	})
}

// A fetch's answer from a server on this machine bounds when it was read:
// one answered 40ms after it was written, on a kept connection, may have
// been read that late by a busy server, and the margin covers it.
func TestObserveAnswered(t *testing.T) {
	rules := []throttle.Rule{{N: 1, Window: time.Minute}}
	b, err := throttle.New(throttle.Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	m := New(b, 10*time.Millisecond, 10*time.Millisecond, rules)
	at := time.Now() // the tracker counts the calls of the last window before now
	for i, gap := range []time.Duration{0, 40 * time.Millisecond} {
		at := at.Add(time.Duration(i) * time.Millisecond)
		m.Observe(runner.Event{Kind: runner.JobStarted, Job: runner.Job{Seq: int64(i)}, Admission: throttle.Admission{At: at}})
		sent := at.Add(time.Millisecond)
		res := &runner.Result{Job: runner.Job{Seq: int64(i)}, Start: at, Sent: sent, Lag: time.Millisecond, Answered: sent.Add(gap),
			Runtime: 2*time.Millisecond + gap, Local: true}
		m.Observe(runner.Event{Kind: runner.JobFinished, Result: res})
	}
	if got := b.Stats().Margin; got != 41*time.Millisecond {
		t.Errorf("after a fetch answered 40ms after it was written, 1ms after its admission: margin %v, want 41ms", got)
	}
}
