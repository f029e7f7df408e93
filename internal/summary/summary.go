// Package summary is the final report of a run of pace run, pace fetch or
// pace proxy, and what it is made of: what the run counted (Snapshot, with
// job durations' quantiles in Durations and the latest admissions in
// Recent), what held the run back (Of, the one place the binding
// constraint is decided), and the Summary that New, a pure function, makes
// of them, written for people (WriteText) or as the JSON of
// docs/summary.md.
package summary

import (
	"fmt"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/learn"
)

// SchemaVersion is the version of the JSON summary's schema
// (docs/summary.md). It changes only when a field changes meaning or
// goes away; new fields may appear without a change.
const SchemaVersion = 1

// Summary is the final report of a run: what ran, how fast, and what held
// it back. New makes it from the facts of a run; WriteText and WriteJSON
// (or MarshalJSON) write it.
type Summary struct {
	OK       int64 // items that succeeded
	Failed   int64 // items that failed, after their retries
	Retried  int64 // items that needed more than one attempt
	Attempts int64 // attempts started, retries included
	Skipped  int64 // items a --resume skipped because the job log has them done
	// NotStarted counts the items that never started because the run
	// ended early; NotStartedKnown is false when the input was not read
	// to its end and its length is unknown (then NotStarted is a floor).
	NotStarted      int64
	NotStartedKnown bool
	// Unstarted counts admitted attempts that could not start for lack
	// of pace's own resources and were tried again.
	Unstarted int64
	Elapsed   time.Duration
	Rate      float64 // attempts started per second of Elapsed
	Rules     []RuleSummary
	Binding   Binding
	Jobs      int
	// PeakInFlight is the most jobs running at once in this process.
	PeakInFlight int
	GlobalJobs   int           // --global-jobs, 0 for none
	SlotWaits    int64         // waits for a fleet-wide slot
	SlotWaitTime time.Duration // time they took
	Margin       time.Duration // the margin in force at the end
	MarginFixed  bool          // --margin was given
	P50, P95     time.Duration // job durations
	Max          time.Duration
	FailedItems  []FailedItem
	Interrupted  string // "SIGINT", "SIGTERM" or "SIGPIPE" (stdout closed) when the run was cut short
	// Stopped says why admissions stopped early, other than a signal: a
	// job log or output that could not be written, a backend failure.
	Stopped  string
	ExitCode int
	HTTP     *HTTP // pace fetch's responses and server pauses
	Proxy    *Proxy
	Store    *throttle.StoreStats
	// Learned says what pace learned from the server: refusals, the rule
	// it inferred, the rules it adopted (--rules-from-server).
	Learned *Learned
	// JobLog is the job log the run wrote, if any: the text summary says
	// how to draw it.
	JobLog string
	// Brief makes the text summary its first line alone: a short clean
	// run at a terminal (see briefSummary).
	Brief bool
}

// Proxy is pace proxy's part of a Summary: the requests it received, and
// those it answered itself without sending them upstream (which spent
// nothing and have no row in the job log).
type Proxy struct {
	Requests int64 // received
	MaxWait  int64 // answered 429 because the wait would pass --max-wait (or a published rule, --max-server-pause)
	Connect  int64 // CONNECT requests, answered 405: pace proxy is not a forward proxy
	Gone     int64 // the client went away while its request waited
	Refused  int64 // answered 503: stopping, or the quota's store down
	Stalled  int64 // answered 408: the client stopped sending its body before the request was sent (--client-timeout)
	DotPath  int64 // answered 400: a "." or ".." segment in the path
	Asterisk int64 // answered 400: "*" as the target of another method than OPTIONS
	BadBody  int64 // answered 400: a malformed body, read before the wait
}

// RuleSummary is one rule's share of a Summary.
type RuleSummary struct {
	Rule      throttle.Rule
	PeakUsage float64 // highest fraction of N in any window
	Waits     int64   // admissions that waited on this rule
	WaitTime  time.Duration
}

// HTTP is pace fetch's part of a Summary: responses by status over
// every attempt, and the pauses the server asked for.
type HTTP struct {
	Status     map[string]int64 // responses by status code ("200", "429", ...)
	NoResponse int64            // attempts that got no response
	Conns      map[string]int64 // of those, by cause: refused, reset, dns, timeout, tls
	Bytes      int64            // body bytes kept (stdout or files)
	// Pauses counts the times the server stopped admissions (429/503,
	// rate-limit headers); PauseWaitTime is how long admissions waited
	// on them; PauseReason is the latest reason.
	Pauses        int64
	PauseWaitTime time.Duration
	PauseReason   string
}

// BindingKind says what kind of constraint held a run back.
type BindingKind int

const (
	BindNothing    BindingKind = iota // nothing held the run back
	BindRule                          // a rate rule
	BindJobs                          // -j, the jobs in flight in this process
	BindGlobalJobs                    // --global-jobs, the fleet's jobs in flight
	BindServer                        // pauses the server asked for
)

// Binding names what held a run back: a kind, and the rule for BindRule.
type Binding struct {
	Kind BindingKind
	Rule throttle.Rule // for BindRule
}

// Text returns the binding as the summary shows it: the rule ("5/s"),
// "-j 4", "--global-jobs 8", "server", or "".
func (b Binding) Text(jobs, globalJobs int) string {
	switch b.Kind {
	case BindRule:
		return b.Rule.String()
	case BindJobs:
		return fmt.Sprintf("-j %d", jobs)
	case BindGlobalJobs:
		return fmt.Sprintf("--global-jobs %d", globalJobs)
	case BindServer:
		return "server"
	}
	return ""
}

// jsonKind names the kind in the JSON summary.
func (k BindingKind) jsonKind() string {
	return [...]string{"none", "rule", "jobs", "global_jobs", "server"}[k]
}

// Of picks what held the run back: whatever admissions waited on
// longest (a rule, the fleet's slots, the server's pauses); failing that,
// a rule that was full; failing that, -j if it was reached. This is the
// one place binding is decided.
func Of(st throttle.Stats, learnedWait time.Duration, peakInFlight, jobs int) Binding {
	var b Binding
	var longest time.Duration
	for _, r := range st.Rules {
		if r.WaitTime > longest {
			b, longest = Binding{Kind: BindRule, Rule: r.Rule}, r.WaitTime
		}
	}
	if st.MaxInFlight > 0 && st.SlotWaitTime > longest {
		b, longest = Binding{Kind: BindGlobalJobs}, st.SlotWaitTime
	}
	if st.PauseWaitTime+learnedWait > longest {
		b = Binding{Kind: BindServer}
	}
	if b.Kind != BindNothing {
		return b
	}
	peak := 0.0
	for _, r := range st.Rules {
		if r.PeakUsage >= 1 && r.PeakUsage > peak {
			b, peak = Binding{Kind: BindRule, Rule: r.Rule}, r.PeakUsage
		}
	}
	if b.Kind == BindNothing && jobs > 0 && peakInFlight >= jobs {
		b = Binding{Kind: BindJobs}
	}
	return b
}

// Learned is what pace learned from the server.
type Learned = learn.Report

// Facts are what a run counted: all a Summary is made of but the exit
// code and why the run stopped, which are the command's to decide.
type Facts struct {
	Tally   Snapshot       // the pool's events, counted
	Stats   throttle.Stats // the backend's, at the end
	Learned *Learned       // what the transport learned from the server; nil: no transport
	Elapsed time.Duration
	Jobs    int   // -j as the pool ran it
	Skipped int64 // items a --resume skipped
	// Total is the items in the input, -1 if unknown; Read is those read
	// (-1: the reader never ended), ReadAll whether it read to the end.
	Total, Read int64
	ReadAll     bool
	MarginFixed bool   // --margin was given
	Signal      string // the signal that cut the run short, if any
}

// New makes the summary of a run from its facts. It reads nothing but f;
// ExitCode, Stopped and JobLog are left for the caller.
func New(f Facts) *Summary {
	t := f.Tally
	s := &Summary{
		OK: t.OK, Failed: t.Failed, Retried: t.Retried, Attempts: t.Attempts, Skipped: f.Skipped,
		Unstarted: t.NotStarted, Elapsed: f.Elapsed, Jobs: f.Jobs, PeakInFlight: t.PeakRunning,
		P50: t.P50, P95: t.P95, Max: t.Max, FailedItems: t.FailedItems,
		GlobalJobs: f.Stats.MaxInFlight, SlotWaits: f.Stats.SlotWaits, SlotWaitTime: f.Stats.SlotWaitTime,
		Margin: f.Stats.Margin, MarginFixed: f.MarginFixed, Interrupted: f.Signal,
	}
	if s.Elapsed > 0 {
		s.Rate = float64(s.Attempts) / s.Elapsed.Seconds()
	}
	for _, r := range f.Stats.Rules {
		s.Rules = append(s.Rules, RuleSummary{Rule: r.Rule, PeakUsage: r.PeakUsage, Waits: r.Waits, WaitTime: r.WaitTime})
	}
	var learnedWait time.Duration
	if f.Learned != nil {
		learnedWait = f.Learned.WaitTime
		if f.Learned.Refusals > 0 || len(f.Learned.Adopted) > 0 {
			s.Learned = f.Learned
		}
	}
	s.Binding = Of(f.Stats, learnedWait, t.PeakRunning, f.Jobs)
	if f.Stats.Store.Name != "" {
		store := f.Stats.Store
		s.Store = &store
	}
	if t.HTTP {
		s.HTTP = &HTTP{Status: t.Statuses, NoResponse: t.NoResponse, Conns: t.Conns, Bytes: t.Bytes,
			Pauses: f.Stats.Pauses, PauseWaitTime: f.Stats.PauseWaitTime, PauseReason: f.Stats.PauseReason}
		if s.HTTP.Status == nil {
			s.HTTP.Status = map[string]int64{}
		}
	}
	// Items that never started: of the input's known length, or of what
	// was read when the input was not read to its end.
	done := t.OK + t.Failed
	switch {
	case f.Total >= 0:
		s.NotStarted, s.NotStartedKnown = max(f.Total-done, 0), true
	case f.Read >= 0:
		s.NotStarted, s.NotStartedKnown = max(f.Read-done, 0), f.ReadAll
	}
	return s
}
