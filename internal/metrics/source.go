package metrics

import (
	"sync"

	"github.com/pace-cli/pace/internal/summary"
	"github.com/pace-cli/pace/throttle"
)

// Source gives the metrics server a run's state. The server starts before
// the backend opens, so that a busy port fails the run before anything is
// spent; until the run has a state (Set), a scrape (Get) sees zeros. The
// zero value is ready to use and safe for concurrent use.
type Source struct {
	mu   sync.Mutex
	snap func() Snapshot
}

// Set makes snap the run's state from now on.
func (m *Source) Set(snap func() Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snap = snap
}

// Get returns the run's state now, zeros before Set.
func (m *Source) Get() Snapshot {
	m.mu.Lock()
	snap := m.snap
	m.mu.Unlock()
	if snap == nil {
		return Snapshot{}
	}
	return snap()
}

// Of turns a run's tally and its backend's stats into the metrics'
// snapshot: the same numbers the summary is made of.
func Of(t summary.Snapshot, st throttle.Stats) Snapshot {
	s := Snapshot{
		Admitted:      st.Admitted,
		OK:            t.OK,
		Failed:        t.Failed,
		Retried:       t.Retried,
		NotStarted:    t.NotStarted,
		InFlight:      t.Running,
		Pauses:        st.Pauses,
		PauseSeconds:  st.PauseWaitTime.Seconds(),
		MarginSeconds: st.Margin.Seconds(),
		Store:         st.Store.Name,
		RoundTrips:    st.Store.RoundTrips,
		Failures:      st.Store.Failures,
	}
	for _, r := range st.Rules {
		s.Rules = append(s.Rules, Rule{
			Rule:        r.Rule.String(),
			Usage:       r.Usage,
			PeakUsage:   r.PeakUsage,
			Waits:       r.Waits,
			WaitSeconds: r.WaitTime.Seconds(),
		})
	}
	return s
}
