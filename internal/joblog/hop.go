package joblog

import (
	"strings"

	"github.com/pace-cli/pace/runner"
)

// ExitHop is the Exitval of a row that records a call an attempt made
// besides its own, each admitted under the rules (runner.Hop): a redirect
// pace fetch followed, or a request the HTTP transport sent again on a
// new connection after a kept-alive one failed. Neither pace nor GNU
// parallel writes it for an attempt.
const ExitHop = -3

// The marks that begin a hop row's Command, before its "METHOD URL": shell
// comments, so that a tool that runs the Command of a failed row again
// (GNU parallel's --retry-failed) runs nothing.
const (
	redirectMark = "# redirect followed: "
	againMark    = "# sent again: "
)

// Hop reports whether e records a call an attempt made besides its own
// (ExitHop, a Signal of 0 and a Command that begins with a hop's mark).
// Such rows count against the rules like any other (Entry.Call); they are
// no attempt of their item, for --resume, nor a failure.
func (e Entry) Hop() bool {
	return e.Exit == ExitHop && e.Signal == 0 &&
		(strings.HasPrefix(e.Command, redirectMark) || strings.HasPrefix(e.Command, againMark))
}

// HopRequest returns the "METHOD URL" of a hop row, and whether e is one.
func (e Entry) HopRequest() (string, bool) {
	if !e.Hop() {
		return "", false
	}
	if r, ok := strings.CutPrefix(e.Command, redirectMark); ok {
		return r, true
	}
	return strings.TrimPrefix(e.Command, againMark), true
}

// HopEntries returns the rows of the calls r made besides its own
// (runner.HTTPInfo.Hops), in the order they were admitted, each with r's
// Seq: its admission as Starttime, the time to its answer as JobRuntime,
// its cost in Send when the run keeps cost rules (cost), ExitHop, and its
// "METHOD URL" after a mark saying which kind of call it was. A job log
// writes them with r's own row, just before it (Writer.Write), so that a
// run seeded from the log, and pace audit, count every call the server
// saw. Nil when r made none.
func HopEntries(r *runner.Result, cost bool) []Entry {
	if r.HTTP == nil || len(r.HTTP.Hops) == 0 {
		return nil
	}
	rows := make([]Entry, 0, len(r.HTTP.Hops))
	for _, h := range r.HTTP.Hops {
		e := Entry{Seq: int(r.Job.Seq), Host: ":", Start: h.Start, Runtime: max(h.Runtime, 0), Exit: ExitHop}
		if cost {
			e.Send = int64(max(h.Cost, 1))
		}
		mark := redirectMark
		if h.Again {
			mark = againMark
		}
		e.Command = mark + h.Method + " " + h.URL
		rows = append(rows, e)
	}
	return rows
}
