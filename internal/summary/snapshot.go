package summary

import (
	"time"

	"github.com/pace-cli/pace/throttle"
)

// Snapshot is what a run's tally counted at one instant: items, attempts,
// jobs in flight, job durations, HTTP responses, the latest admissions.
type Snapshot struct {
	OK, Failed, Retried, Attempts, NotStarted, ItemsStarted int64
	Running, PeakRunning                                    int
	P50, P95, Max                                           time.Duration
	FailedItems                                             []FailedItem
	Statuses                                                map[string]int64
	NoResponse                                              int64
	Conns                                                   map[string]int64
	Bytes                                                   int64
	HTTP                                                    bool // some result was a fetch
	Recent                                                  []throttle.Call
	MeanCost                                                int
}

// FailedItem names an item that failed for good.
type FailedItem struct {
	Seq    int64  `json:"seq"`
	Item   string `json:"item"`
	Status string `json:"status"`
}
