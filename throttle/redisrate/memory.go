package redisrate

import (
	"cmp"
	"slices"
	"sync"

	"github.com/pace-cli/pace/throttle/internal/gate"
)

// memory is what a Limiter remembers of its own admissions that a rule
// may still count, so that it can record them again in a quota Redis
// lost (repairLua). It holds no more than a window's worth:
//
//   - for the log rules (count and cost), each call still inside the
//     longest log window (its id, instant and cost): at most the N of
//     that rule, since every call weighs at least 1 there;
//   - for a counter (N > Options.CounterAbove, where a call-by-call memory
//     would be as large as N), the weight this process added to each
//     bucket of the counter still overlapping its window, and how many
//     calls that is: at most about 1027 buckets a counter.
//
// It also holds the process's latest admission (instant and id), which
// the admission script checks is still recorded, and whether it should.
// It is safe for concurrent use (the admitter adds, Correct changes a
// cost).
type memory struct {
	mu    sync.Mutex
	calls []memCall // oldest first (ascending ids and instants)
	// counters[j] holds the buckets of rule j (Redis order) when it is a
	// counter, else nil; lows[j] is no later than its oldest bucket.
	counters []map[int64]memBucket
	lows     []int64
	// last and lastID are the latest admission's instant (µs, Redis's)
	// and id; 0 before one. check is false after a repair until the next
	// admission: the repair has done what could be done, and the next
	// attempt admits without asking again (no loop on a state the repair
	// could not make whole).
	last   int64
	lastID uint64
	check  bool
	widest int64 // the widest fleet margin seen (µs): nothing is dropped a rule could still count

	// Fixed at construction.
	logs     bool    // some rule is a log
	keep     int64   // the longest log window, µs, margin excluded
	most     int     // the most calls kept
	bases    []int64 // each rule's window, µs (Redis order), as the scripts get it
	gs       []int64 // a counter's bucket width, µs; 0 for a log
	costRule []bool  // rule j weighs a call by its cost
}

// memCall is one admission remembered.
type memCall struct {
	id   uint64
	at   int64 // Redis's instant, µs
	cost int
}

// memBucket is this process's share of a counter's bucket.
type memBucket struct {
	weight int64
	calls  int64
}

// newMemory returns the memory of a limiter whose rules (Redis order)
// have windows bases (µs), modes and limits ns.
func newMemory(bases []int64, modes []string, ns []int, cost []bool) *memory {
	m := &memory{bases: bases, gs: make([]int64, len(bases)), costRule: cost,
		counters: make([]map[int64]memBucket, len(bases)), lows: make([]int64, len(bases))}
	for j, mode := range modes {
		if mode == modeCounter {
			m.gs[j] = max((bases[j]+1023)/1024, 1)
			m.counters[j] = map[int64]memBucket{}
			continue
		}
		m.logs = true
		m.keep = max(m.keep, bases[j])
		m.most = max(m.most, ns[j])
	}
	m.most += gate.MaxBatch
	return m
}

// latest returns the latest admission to check (0 and 0 when there is
// none or it should not be checked).
func (m *memory) latest() (at int64, id uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.check {
		return 0, 0
	}
	return m.last, m.lastID
}

// add remembers the calls id, id+1, ... of the given costs, admitted at
// at (µs) with the fleet's margin (µs) in force, and forgets what has
// left every window.
func (m *memory) add(id uint64, at int64, costs []int, margin int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.widest = max(m.widest, margin)
	m.last, m.lastID, m.check = at, id+uint64(len(costs))-1, true
	if m.logs {
		for x, c := range costs {
			m.calls = append(m.calls, memCall{id: id + uint64(x), at: at, cost: c})
		}
	}
	for j, bs := range m.counters {
		if bs == nil {
			continue
		}
		k := floorDiv(at, m.gs[j])
		if len(bs) == 0 || k < m.lows[j] {
			m.lows[j] = k
		}
		b := bs[k]
		for _, c := range costs {
			b.weight += m.weight(j, c)
			b.calls++
		}
		bs[k] = b
	}
	m.trim(at)
}

// weight returns what a call of cost c weighs in rule j.
func (m *memory) weight(j, c int) int64 {
	if m.costRule[j] {
		return int64(c)
	}
	return 1
}

// trim forgets what no window at now (µs) holds, even widened by the
// widest margin seen, and the oldest calls beyond m.most. Requires mu held.
func (m *memory) trim(now int64) {
	// Oldest first: instants ascend, unless Redis's clock stepped back,
	// and a call behind a later one is then kept until that one goes (the
	// safe side).
	from := now - m.keep - m.widest
	n := max(len(m.calls)-m.most, 0)
	for n < len(m.calls) && m.calls[n].at <= from {
		n++
	}
	// Resliced, not moved: append copies only the calls kept once it
	// outgrows the array.
	m.calls = m.calls[n:]
	for j, bs := range m.counters {
		if len(bs) == 0 {
			continue
		}
		k0 := floorDiv(now-m.bases[j]-m.widest+1, m.gs[j])
		if k0 <= m.lows[j] {
			continue
		}
		if k0-m.lows[j] > int64(2*len(bs)) {
			for b := range bs {
				if b < k0 {
					delete(bs, b)
				}
			}
		} else {
			for b := m.lows[j]; b < k0; b++ {
				delete(bs, b)
			}
		}
		m.lows[j] = k0
	}
}

// correct records that the call id, admitted at at (µs), costs to
// instead of from.
func (m *memory) correct(id uint64, at int64, from, to int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i, ok := slices.BinarySearchFunc(m.calls, id, func(c memCall, id uint64) int {
		switch {
		case c.id < id:
			return -1
		case c.id > id:
			return 1
		}
		return 0
	}); ok {
		m.calls[i].cost = to
	}
	for j, bs := range m.counters {
		if bs == nil || !m.costRule[j] {
			continue
		}
		k := floorDiv(at, m.gs[j])
		if b, ok := bs[k]; ok {
			b.weight = max(b.weight+int64(to-from), 0)
			bs[k] = b
		}
	}
}

// forget forgets every admission: a deliberate reset of the quota made
// them count no more.
func (m *memory) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = nil
	for j, bs := range m.counters {
		if bs != nil {
			m.counters[j] = map[int64]memBucket{}
		}
	}
}

// repairEntry is one counter bucket to record again: rule j (Redis
// order), bucket index, weight and calls.
type repairEntry struct {
	rule                  int
	bucket, weight, calls int64
}

// repaired marks the latest admission as not to be checked until the
// next one (see memory.check).
func (m *memory) repaired() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.check = false
}

// snapshot returns copies of the calls and the counters' buckets
// remembered.
func (m *memory) snapshot() ([]memCall, []repairEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var es []repairEntry
	for j, bs := range m.counters {
		for b, v := range bs {
			es = append(es, repairEntry{rule: j, bucket: b, weight: v.weight, calls: v.calls})
		}
	}
	slices.SortFunc(es, func(a, b repairEntry) int {
		return cmp.Or(cmp.Compare(a.rule, b.rule), cmp.Compare(a.bucket, b.bucket))
	})
	return slices.Clone(m.calls), es
}

// floorDiv is a/b rounded down (b > 0), as Lua's math.floor(a / b).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
