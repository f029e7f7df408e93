// Package fromlog turns job log rows into pace plot's picture model: it
// joins internal/joblog and internal/plot, which lean on each other
// nowhere else (plot is standard library only).
package fromlog

import (
	"slices"
	"time"

	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/internal/plot"
)

// Calls turns job log rows into the picture's calls, and the gaps
// after refusals into pauses. A row of a call an attempt made besides its
// own (a redirect followed, a request sent again: joblog.Entry.Hop) is a
// call of no time: it went out on its attempt's slot, whose own row keeps
// it in flight, and the calls in flight stay within the run's -j.
func Calls(entries []joblog.Entry) ([]plot.Call, []plot.Pause) {
	// A row is a retried attempt when a later row has the same Seq.
	last := make(map[int]int, len(entries))
	for i, e := range entries {
		last[e.Seq] = i
	}
	calls := make([]plot.Call, len(entries))
	for i, e := range entries {
		c := plot.Call{Start: e.Start, Runtime: e.Runtime, Cost: e.Cost()}
		if e.Hop() {
			c.Runtime = 0
		}
		switch {
		case e.Exit == 429 || e.Exit == 503:
			c.Outcome = plot.Refused
		case e.Failed() && last[e.Seq] != i:
			c.Outcome = plot.Retried
		case e.Failed():
			c.Outcome = plot.Failed
		}
		calls[i] = c
	}
	// After a refusal, nothing was admitted until the pause the server
	// asked for had passed: the gap to the next admission is that pause.
	starts := make([]time.Time, len(entries))
	for i, e := range entries {
		starts[i] = e.Start
	}
	slices.SortFunc(starts, time.Time.Compare)
	var pauses []plot.Pause
	for _, c := range calls {
		if c.Outcome != plot.Refused {
			continue
		}
		from := c.Start.Add(c.Runtime)
		i, _ := slices.BinarySearchFunc(starts, from, time.Time.Compare)
		if i < len(starts) && starts[i].After(from) {
			pauses = append(pauses, plot.Pause{From: from, To: starts[i]})
		}
	}
	return calls, pauses
}
