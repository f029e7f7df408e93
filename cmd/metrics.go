package cmd

import (
	"sync"

	"github.com/pace-cli/pace/internal/metrics"
	"github.com/pace-cli/pace/internal/summary"
	"github.com/pace-cli/pace/throttle"
)

// metricsSource gives the metrics server (--metrics-addr) the run's
// state. The server starts before the backend opens, so that a busy port
// fails the run before anything is spent; until the run has a state, a
// scrape sees zeros.
type metricsSource struct {
	mu   sync.Mutex
	snap func() metrics.Snapshot
}

func (m *metricsSource) set(snap func() metrics.Snapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.snap = snap
}

func (m *metricsSource) get() metrics.Snapshot {
	m.mu.Lock()
	snap := m.snap
	m.mu.Unlock()
	if snap == nil {
		return metrics.Snapshot{}
	}
	return snap()
}

// metricsSnapshot turns the run's tally and the backend's stats into the
// metrics' snapshot: the same numbers the summary is made of.
func metricsSnapshot(t summary.Snapshot, st throttle.Stats) metrics.Snapshot {
	s := metrics.Snapshot{
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
		s.Rules = append(s.Rules, metrics.Rule{
			Rule:        r.Rule.String(),
			Usage:       r.Usage,
			PeakUsage:   r.PeakUsage,
			Waits:       r.Waits,
			WaitSeconds: r.WaitTime.Seconds(),
		})
	}
	return s
}
