package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// Summary is the final report of a run: what ran, how fast, and what held
// it back.
type Summary struct {
	OK       int64 // items that succeeded
	Failed   int64 // items that failed, after their retries
	Retried  int64 // items that needed more than one attempt
	Attempts int64 // attempts started, retries included
	Skipped  int64 // items a --resume skipped because the job log has them done
	Elapsed  time.Duration
	Rate     float64 // attempts started per second of Elapsed
	Rules    []RuleSummary
	// Binding names what held the run back: a rule, the in-flight cap
	// ("-j N"), or "" when nothing did.
	Binding      string
	PeakInFlight int
	Jobs         int
	P50, P95     time.Duration // job durations
	Max          time.Duration
	Interrupted  string // "SIGINT", "SIGTERM" or "SIGPIPE" (stdout closed) when the run was cut short
	ExitCode     int
	HTTP         *HTTPSummary  // pace fetch's responses and server pauses
	Redis        *RedisSummary // the shared quota's traffic, with --redis
}

// RedisSummary is the Redis part of a Summary: the fleet-wide slots this
// process waited for, and its traffic with Redis.
type RedisSummary struct {
	GlobalJobs   int
	SlotWaits    int64
	SlotWaitTime time.Duration
	RoundTrips   int64
	Failures     int64
	LeasesLost   int64
}

// MarshalJSON writes r with the slot wait in seconds.
func (r *RedisSummary) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		GlobalJobs int     `json:"global_jobs"`
		SlotWaits  int64   `json:"slot_waits"`
		SlotWaited float64 `json:"slot_waited_seconds"`
		RoundTrips int64   `json:"round_trips"`
		Failures   int64   `json:"failures"`
		LeasesLost int64   `json:"leases_lost"`
	}{r.GlobalJobs, r.SlotWaits, r.SlotWaitTime.Seconds(), r.RoundTrips, r.Failures, r.LeasesLost})
}

// setRedis adds the Redis part, and names --global-jobs as the binding
// constraint when this process waited longer for fleet-wide slots than on
// any rule.
func (s *Summary) setRedis(globalJobs int, st throttle.Stats, rs throttle.RedisStats) {
	s.Redis = &RedisSummary{GlobalJobs: globalJobs, SlotWaits: st.SlotWaits, SlotWaitTime: st.SlotWaitTime,
		RoundTrips: rs.RoundTrips, Failures: rs.Failures, LeasesLost: rs.LeasesLost}
	if globalJobs <= 0 || st.SlotWaitTime <= 0 {
		return
	}
	for _, r := range s.Rules {
		if r.Waited >= st.SlotWaitTime {
			return
		}
	}
	s.Binding = s.Redis.binding()
}

func (r *RedisSummary) binding() string { return fmt.Sprintf("--global-jobs %d", r.GlobalJobs) }

// RuleSummary is one rule's share of a Summary.
type RuleSummary struct {
	Rule      throttle.Rule
	PeakUsage float64 // highest fraction of N in any window
	Waits     int64   // admissions that waited on this rule
	Waited    time.Duration
}

// rulesSummary fills in the rules and the binding constraint from the
// limiter's statistics.
func (s *Summary) setRules(st throttle.Stats) {
	s.Rules = s.Rules[:0]
	for _, r := range st.Rules {
		s.Rules = append(s.Rules, RuleSummary{Rule: r.Rule, PeakUsage: r.PeakUsage, Waits: r.Waits, Waited: r.WaitTime})
	}
	s.Binding = binding(s.Rules, s.PeakInFlight, s.Jobs)
}

// binding picks what held the run back: the rule waited on longest; else
// a rule that was full; else the in-flight cap if it was reached.
func binding(rules []RuleSummary, peakInFlight, jobs int) string {
	best := -1
	for i, r := range rules {
		if r.Waited > 0 && (best < 0 || r.Waited > rules[best].Waited) {
			best = i
		}
	}
	if best < 0 {
		for i, r := range rules {
			if r.PeakUsage >= 1 && (best < 0 || r.PeakUsage > rules[best].PeakUsage) {
				best = i
			}
		}
	}
	switch {
	case best >= 0:
		return rules[best].Rule.String()
	case jobs > 0 && peakInFlight >= jobs:
		return fmt.Sprintf("-j %d", jobs)
	}
	return ""
}

// writeText writes s for people.
func (s *Summary) writeText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "pace: %d ok, %d failed, %d retried in %s (%d starts, %s/s)",
		s.OK, s.Failed, s.Retried, roundDuration(s.Elapsed), s.Attempts, formatRate(s.Rate))
	if s.Skipped > 0 {
		fmt.Fprintf(&b, ", %d skipped (done in the job log)", s.Skipped)
	}
	if s.Interrupted != "" {
		fmt.Fprintf(&b, ", interrupted by %s", s.Interrupted)
	}
	b.WriteByte('\n')
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range s.Rules {
		mark := ""
		if r.Rule.String() == s.Binding {
			mark = "\tbinding"
		}
		fmt.Fprintf(tw, "  rule %s\tpeak %.0f%%\twaited %s (%d waits)%s\n",
			r.Rule, r.PeakUsage*100, roundDuration(r.Waited), r.Waits, mark)
	}
	mark := ""
	if s.Binding == fmt.Sprintf("-j %d", s.Jobs) {
		mark = "\tbinding"
	}
	fmt.Fprintf(tw, "  in flight\tpeak %d of %d%s\n", s.PeakInFlight, s.Jobs, mark)
	if s.Attempts > 0 {
		fmt.Fprintf(tw, "  job time\tp50 %s\tp95 %s\tmax %s\n", roundDuration(s.P50), roundDuration(s.P95), roundDuration(s.Max))
	}
	if r := s.Redis; r != nil {
		if r.GlobalJobs > 0 {
			mark := ""
			if s.Binding == r.binding() {
				mark = "\tbinding"
			}
			fmt.Fprintf(tw, "  fleet slots\t%d\twaited %s (%d waits)%s\n", r.GlobalJobs, roundDuration(r.SlotWaitTime), r.SlotWaits, mark)
		}
		perAdmission := 0.0
		if s.Attempts > 0 {
			perAdmission = float64(r.RoundTrips) / float64(s.Attempts)
		}
		fmt.Fprintf(tw, "  redis\t%d round trips (%.2f per start)\t%d failed\n", r.RoundTrips, perAdmission, r.Failures)
	}
	if s.HTTP != nil {
		s.HTTP.writeText(tw, s.Binding)
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

// summaryJSON is Summary's JSON form; durations are in seconds.
type summaryJSONForm struct {
	OK           int64             `json:"ok"`
	Failed       int64             `json:"failed"`
	Retried      int64             `json:"retried"`
	Attempts     int64             `json:"attempts"`
	Skipped      int64             `json:"skipped"`
	Elapsed      float64           `json:"elapsed_seconds"`
	Rate         float64           `json:"rate_per_second"`
	Rules        []ruleJSONForm    `json:"rules"`
	Binding      string            `json:"binding"`
	PeakInFlight int               `json:"peak_in_flight"`
	Jobs         int               `json:"jobs"`
	Duration     durationsJSONForm `json:"job_duration_seconds"`
	Interrupted  string            `json:"interrupted,omitempty"`
	ExitCode     int               `json:"exit_code"`
	HTTP         *HTTPSummary      `json:"http,omitempty"`
	Redis        *RedisSummary     `json:"redis,omitempty"`
}

type ruleJSONForm struct {
	Rule      string  `json:"rule"`
	PeakUsage float64 `json:"peak_usage"`
	Waits     int64   `json:"waits"`
	Waited    float64 `json:"waited_seconds"`
}

type durationsJSONForm struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	Max float64 `json:"max"`
}

// writeJSON writes s as one JSON object on one line.
func (s *Summary) writeJSON(w io.Writer) error {
	j := summaryJSONForm{
		OK: s.OK, Failed: s.Failed, Retried: s.Retried, Attempts: s.Attempts, Skipped: s.Skipped,
		Elapsed: s.Elapsed.Seconds(), Rate: round3(s.Rate), Rules: []ruleJSONForm{},
		Binding: s.Binding, PeakInFlight: s.PeakInFlight, Jobs: s.Jobs,
		Duration:    durationsJSONForm{P50: s.P50.Seconds(), P95: s.P95.Seconds(), Max: s.Max.Seconds()},
		Interrupted: s.Interrupted, ExitCode: s.ExitCode,
	}
	if s.HTTP != nil {
		j.HTTP = s.HTTP.jsonForm()
	}
	j.Redis = s.Redis
	for _, r := range s.Rules {
		j.Rules = append(j.Rules, ruleJSONForm{Rule: r.Rule.String(), PeakUsage: round3(r.PeakUsage), Waits: r.Waits, Waited: r.Waited.Seconds()})
	}
	return json.NewEncoder(w).Encode(j)
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// formatRate writes a rate with about three significant digits.
func formatRate(r float64) string {
	switch {
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	case r >= 10:
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.2f", r)
}

// roundDuration rounds d for display: to 1ms under 10s, else to 100ms,
// and whole seconds past a minute.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < 10*time.Second:
		return d.Round(time.Millisecond)
	case d < time.Minute:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// exactSamples is how many durations are kept exactly; past that they go
// into logarithmic buckets, so memory stays bounded on endless input.
const exactSamples = 10000

// bucketBase is the ratio between bucket bounds: quantiles past
// exactSamples are within 1% of the truth.
const bucketBase = 1.01

// durations collects job durations for quantiles in bounded memory.
type durations struct {
	exact   []time.Duration
	buckets map[int]int64 // bucket index -> count, once exact overflowed
	n       int64
	max     time.Duration
}

// add records one duration.
func (d *durations) add(x time.Duration) {
	x = max(x, 0)
	d.n++
	d.max = max(d.max, x)
	if d.buckets == nil && len(d.exact) < exactSamples {
		d.exact = append(d.exact, x)
		return
	}
	if d.buckets == nil {
		d.buckets = make(map[int]int64)
		for _, e := range d.exact {
			d.buckets[bucketOf(e)]++
		}
		d.exact = nil
	}
	d.buckets[bucketOf(x)]++
}

func bucketOf(x time.Duration) int {
	if x <= 0 {
		return -1
	}
	return int(math.Floor(math.Log(float64(x)) / math.Log(bucketBase)))
}

// bucketValue is the middle of bucket i.
func bucketValue(i int) time.Duration {
	if i < 0 {
		return 0
	}
	return time.Duration(math.Pow(bucketBase, float64(i)+0.5))
}

// quantile returns the q-quantile (0 < q <= 1) by nearest rank, or 0
// without samples.
func (d *durations) quantile(q float64) time.Duration {
	if d.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(d.n)))
	rank = min(max(rank, 1), d.n)
	if d.buckets == nil {
		s := slices.Clone(d.exact)
		slices.Sort(s)
		return s[rank-1]
	}
	keys := make([]int, 0, len(d.buckets))
	for k := range d.buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var seen int64
	for _, k := range keys {
		seen += d.buckets[k]
		if seen >= rank {
			return min(bucketValue(k), d.max)
		}
	}
	return d.max
}
