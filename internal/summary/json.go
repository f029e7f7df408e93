package summary

import (
	"encoding/json"
	"io"
	"time"

	"github.com/pace-cli/pace/internal/human"
	"github.com/pace-cli/pace/throttle"
)

// The JSON summary's form: see docs/summary.md. Durations are in seconds.
type (
	summaryJSONForm struct {
		SchemaVersion int               `json:"schema_version"`
		OK            int64             `json:"ok"`
		Failed        int64             `json:"failed"`
		Retried       int64             `json:"retried"`
		Attempts      int64             `json:"attempts"`
		Skipped       int64             `json:"skipped"`
		NotStarted    int64             `json:"not_started"`
		NotStartedAll bool              `json:"not_started_exact"`
		Unstarted     int64             `json:"unstarted_attempts"`
		Elapsed       float64           `json:"elapsed_seconds"`
		Rate          float64           `json:"rate_per_second"`
		Rules         []ruleJSONForm    `json:"rules"`
		Binding       bindingJSONForm   `json:"binding"`
		Jobs          int               `json:"jobs"`
		PeakInFlight  int               `json:"peak_in_flight"`
		GlobalJobs    *globalJobsJSON   `json:"global_jobs"`
		Margin        marginJSONForm    `json:"margin"`
		Duration      durationsJSONForm `json:"job_duration_seconds"`
		FailedItems   []FailedItem      `json:"failed_items"`
		FailedMore    int64             `json:"failed_items_more"`
		Interrupted   *string           `json:"interrupted"`
		Stopped       *string           `json:"stopped"`
		ExitCode      int               `json:"exit_code"`
		HTTP          *httpJSONForm     `json:"http,omitempty"`
		Store         *storeJSONForm    `json:"store,omitempty"`
		Learned       *learnedJSONForm  `json:"learned,omitempty"`
		Proxy         *proxyJSONForm    `json:"proxy,omitempty"`
	}
	proxyJSONForm struct {
		Requests int64 `json:"requests"`
		MaxWait  int64 `json:"max_wait_429"`
		Gone     int64 `json:"gone_while_waiting"`
		Refused  int64 `json:"refused_503"`
		Connect  int64 `json:"connect_405"`
		Stalled  int64 `json:"stalled_408"`
		DotPath  int64 `json:"dot_path_400"`
		Asterisk int64 `json:"asterisk_400"`
		BadBody  int64 `json:"bad_body_400"`
	}
	learnedJSONForm struct {
		Refusals int      `json:"refusals"`
		Inferred *string  `json:"inferred_rule"`
		Now      *string  `json:"rule_at_end"`
		Adopted  []string `json:"adopted_rules"`
		WaitTime float64  `json:"wait_seconds"`
	}
	// ruleJSONForm is one rule of the summary (pace audit --json writes
	// its own, with peaks and violations).
	ruleJSONForm struct {
		Rule      string  `json:"rule"`
		N         int     `json:"n"`
		Window    float64 `json:"window_seconds"`
		Cost      bool    `json:"cost"`
		PeakUsage float64 `json:"peak_usage"`
		Waits     int64   `json:"waits"`
		WaitTime  float64 `json:"wait_seconds"`
	}
	bindingJSONForm struct {
		Kind string  `json:"kind"`
		Rule *string `json:"rule"`
		Text string  `json:"text"`
	}
	globalJobsJSON struct {
		Cap       int     `json:"cap"`
		SlotWaits int64   `json:"slot_waits"`
		SlotWait  float64 `json:"slot_wait_seconds"`
	}
	marginJSONForm struct {
		Seconds  float64 `json:"seconds"`
		Adaptive bool    `json:"adaptive"`
	}
	durationsJSONForm struct {
		P50 float64 `json:"p50"`
		P95 float64 `json:"p95"`
		Max float64 `json:"max"`
	}
	httpJSONForm struct {
		Status      map[string]int64 `json:"status"`
		NoResponse  int64            `json:"no_response"`
		Conns       map[string]int64 `json:"no_response_causes"`
		Bytes       int64            `json:"bytes"`
		Pauses      int64            `json:"server_pauses"`
		PauseWait   float64          `json:"paused_seconds"`
		PauseReason string           `json:"pause_reason"`
	}
	storeJSONForm struct {
		Name       string `json:"name"`
		RoundTrips int64  `json:"round_trips"`
		Failures   int64  `json:"failures"`
		LeasesLost int64  `json:"leases_lost"`
	}
)

// ruleJSON returns the JSON object of one rule of the summary.
func ruleJSON(r throttle.Rule, peak float64, waits int64, wait time.Duration) ruleJSONForm {
	return ruleJSONForm{Rule: r.String(), N: r.N, Window: r.Window.Seconds(), Cost: r.Cost,
		PeakUsage: human.Round3(peak), Waits: waits, WaitTime: wait.Seconds()}
}

// MarshalJSON returns s in the JSON form of docs/summary.md.
func (s *Summary) MarshalJSON() ([]byte, error) { return json.Marshal(s.jsonForm()) }

// jsonForm returns s ready for encoding.
func (s *Summary) jsonForm() summaryJSONForm {
	j := summaryJSONForm{
		SchemaVersion: SchemaVersion,
		OK:            s.OK, Failed: s.Failed, Retried: s.Retried, Attempts: s.Attempts, Skipped: s.Skipped,
		NotStarted: s.NotStarted, NotStartedAll: s.NotStartedKnown, Unstarted: s.Unstarted,
		Elapsed: s.Elapsed.Seconds(), Rate: human.Round3(s.Rate), Rules: []ruleJSONForm{},
		Binding:      bindingJSONForm{Kind: s.Binding.Kind.jsonKind(), Text: s.Binding.Text(s.Jobs, s.GlobalJobs)},
		Jobs:         s.Jobs,
		PeakInFlight: s.PeakInFlight,
		Margin:       marginJSONForm{Seconds: s.Margin.Seconds(), Adaptive: !s.MarginFixed},
		Duration:     durationsJSONForm{P50: s.P50.Seconds(), P95: s.P95.Seconds(), Max: s.Max.Seconds()},
		FailedItems:  s.FailedItems,
		FailedMore:   max(s.Failed-int64(len(s.FailedItems)), 0),
		ExitCode:     s.ExitCode,
	}
	if j.FailedItems == nil {
		j.FailedItems = []FailedItem{}
	}
	if s.Binding.Kind == BindRule {
		r := s.Binding.Rule.String()
		j.Binding.Rule = &r
	}
	for _, r := range s.Rules {
		j.Rules = append(j.Rules, ruleJSON(r.Rule, r.PeakUsage, r.Waits, r.WaitTime))
	}
	if s.GlobalJobs > 0 {
		j.GlobalJobs = &globalJobsJSON{Cap: s.GlobalJobs, SlotWaits: s.SlotWaits, SlotWait: s.SlotWaitTime.Seconds()}
	}
	if s.Interrupted != "" {
		j.Interrupted = &s.Interrupted
	}
	if s.Stopped != "" {
		j.Stopped = &s.Stopped
	}
	if h := s.HTTP; h != nil {
		j.HTTP = &httpJSONForm{Status: h.Status, NoResponse: h.NoResponse, Conns: h.Conns, Bytes: h.Bytes,
			Pauses: h.Pauses, PauseWait: h.PauseWaitTime.Seconds(), PauseReason: h.PauseReason}
		if j.HTTP.Conns == nil {
			j.HTTP.Conns = map[string]int64{}
		}
	}
	if l := s.Learned; l != nil {
		lj := &learnedJSONForm{Refusals: l.Refusals, Adopted: []string{}, WaitTime: l.WaitTime.Seconds()}
		if l.First != nil {
			r := l.First.String()
			lj.Inferred = &r
		}
		if l.Now != nil {
			r := l.Now.String()
			lj.Now = &r
		}
		for _, r := range l.Adopted {
			lj.Adopted = append(lj.Adopted, r.String())
		}
		j.Learned = lj
	}
	if p := s.Proxy; p != nil {
		j.Proxy = &proxyJSONForm{Requests: p.Requests, MaxWait: p.MaxWait, Gone: p.Gone, Refused: p.Refused, Connect: p.Connect, Stalled: p.Stalled, DotPath: p.DotPath, Asterisk: p.Asterisk, BadBody: p.BadBody}
	}
	if st := s.Store; st != nil {
		j.Store = &storeJSONForm{Name: st.Name, RoundTrips: st.RoundTrips, Failures: st.Failures, LeasesLost: st.LeasesLost}
	}
	return j
}

// WriteJSON writes s as one JSON object on one line.
func (s *Summary) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(s.jsonForm())
}
