package redisrate

import (
	"fmt"
	"testing"
)

// The memory of a process's own admissions keeps what a rule may still
// count and no more: the calls inside the longest log window (widened by
// the widest margin seen), at most the largest log N plus a batch, and a
// counter's buckets while they overlap its window; corrections change the
// cost kept; a reset forgets everything.
func TestMemory(t *testing.T) {
	const s = int64(1_000_000) // a second, in µs
	// Redis order: 3/s (a log), cost:100/2s (a log), 10/4s kept as a
	// counter (bucket width 4s/1024 = 3907 µs).
	m := newMemory([]int64{s, 2 * s, 4 * s}, []string{modeCount, modeCost, modeCounter}, []int{3, 100, 10}, []bool{false, true, false})
	calls := func() string {
		var out []string
		for _, c := range m.calls {
			out = append(out, fmt.Sprintf("%d@%d:%d", c.id, c.at/1000, c.cost))
		}
		return fmt.Sprint(out)
	}
	buckets := func() int64 {
		var w int64
		for _, b := range m.counters[2] {
			w += b.calls
		}
		return w
	}

	m.add(1, 10*s, []int{5}, 0)
	m.add(2, 11*s, []int{7, 8}, 0) // a batch: one instant
	if got := calls(); got != "[1@10000:5 2@11000:7 3@11000:8]" {
		t.Errorf("calls = %s, want the three", got)
	}
	if at, id := m.latest(); at != 11*s || id != 3 {
		t.Errorf("latest() = %d, %d; want %d, 3 (the batch's last call)", at, id, 11*s)
	}

	// The longest log window is 2s: at 12s+1ms the call at 10s has left
	// it. The counter keeps it: its window is 4s.
	m.add(4, 12*s+1000, []int{1}, 0)
	if got := calls(); got != "[2@11000:7 3@11000:8 4@12001:1]" {
		t.Errorf("calls = %s, want the call at 10s dropped", got)
	}
	if got := buckets(); got != 4 {
		t.Errorf("the counter's buckets hold %d calls, want 4", got)
	}

	// A margin seen widens what is kept: at 13.5s, with 600ms, the calls
	// at 11s are still kept (13.5 - 2.6 = 10.9).
	m.add(5, 13*s+500_000, []int{1}, 600_000)
	if got := calls(); got != "[2@11000:7 3@11000:8 4@12001:1 5@13500:1]" {
		t.Errorf("calls = %s, want the calls at 11s kept under a 600ms margin", got)
	}

	// Corrections change the cost kept, of a call still kept only.
	m.correct(3, 11*s, 8, 20)
	m.correct(1, 10*s, 5, 9)
	if got := calls(); got != "[2@11000:7 3@11000:20 4@12001:1 5@13500:1]" {
		t.Errorf("calls = %s, want call 3 costing 20", got)
	}

	// After a repair the latest admission is not checked until the next.
	m.repaired()
	if at, id := m.latest(); at != 0 || id != 0 {
		t.Errorf("latest() after a repair = %d, %d; want 0, 0", at, id)
	}
	// Far later: the logs forget everything but the new call, the counter
	// its old buckets.
	m.add(6, 30*s, []int{2}, 0)
	if got := calls(); got != "[6@30000:2]" {
		t.Errorf("calls = %s, want only the new one", got)
	}
	if got := buckets(); got != 1 {
		t.Errorf("the counter's buckets hold %d calls, want 1", got)
	}
	if at, id := m.latest(); at != 30*s || id != 6 {
		t.Errorf("latest() = %d, %d; want %d, 6", at, id, 30*s)
	}

	// Never more than the largest log N plus a batch: 100 + 64.
	for i := range 500 {
		m.add(uint64(7+i), 30*s+int64(i), []int{1}, 0)
	}
	if len(m.calls) != 164 || m.calls[len(m.calls)-1].id != 506 {
		t.Errorf("%d calls kept, the last %d; want 164, the last 506", len(m.calls), m.calls[len(m.calls)-1].id)
	}

	m.forget()
	if _, es := m.snapshot(); len(m.calls) != 0 || len(es) != 0 {
		t.Errorf("after forget: %d calls, %d buckets; want none", len(m.calls), len(es))
	}
}
