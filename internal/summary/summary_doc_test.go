package summary

import (
	"encoding/json"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// TestSummarySchemaDocumented checks the JSON summary against
// docs/summary.md: every field the code writes is documented with its
// type, and every documented field is written.
func TestSummarySchemaDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/summary.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_.\\[\\]0-9]+)` \\| ([a-z ]+) \\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = m[2]
	}
	if len(documented) < 40 {
		t.Fatalf("docs/summary.md documents %d fields; the table did not parse", len(documented))
	}

	rule := func(s string) throttle.Rule { return rule(t, s) }
	first, now := rule("5/s"), rule("4/s")
	full := &Summary{
		OK: 3, Failed: 1, Retried: 1, Attempts: 5, Skipped: 2, NotStarted: 4, NotStartedKnown: true, Unstarted: 1,
		Elapsed: 1500 * time.Millisecond, Rate: 3.5,
		Rules:   []RuleSummary{{Rule: rule("5/s"), PeakUsage: 0.5, Waits: 2, WaitTime: 250 * time.Millisecond}},
		Binding: Binding{Kind: BindRule, Rule: rule("5/s")},
		Jobs:    4, PeakInFlight: 3, GlobalJobs: 8, SlotWaits: 1, SlotWaitTime: 1500 * time.Millisecond,
		Margin: 25 * time.Millisecond,
		P50:    1500 * time.Millisecond, P95: 2500 * time.Millisecond, Max: 3500 * time.Millisecond,
		FailedItems: []FailedItem{{Seq: 4, Item: "x", Status: "exit status 1"}},
		Interrupted: "SIGINT", Stopped: "the job log could not be written", ExitCode: 130,
		HTTP: &HTTP{Status: map[string]int64{"200": 3}, NoResponse: 1, Conns: map[string]int64{"refused": 1},
			Bytes: 7, Pauses: 1, PauseWaitTime: 1500 * time.Millisecond, PauseReason: "429"},
		Store:   &throttle.StoreStats{Name: "redis", RoundTrips: 5, Failures: 1, LeasesLost: 1},
		Learned: &Learned{Refusals: 2, First: &first, Now: &now, Adopted: []throttle.Rule{rule("100/m")}, WaitTime: 1500 * time.Millisecond},
		Proxy:   &Proxy{Requests: 9, MaxWait: 1, Gone: 1, Refused: 1, Stalled: 1},
	}
	written := map[string]any{}
	flattenJSON(t, "", roundTrip(t, full), written)

	for path, v := range written {
		typ, ok := documented[path]
		if !ok {
			t.Errorf("the summary writes %s, which docs/summary.md does not document", path)
			continue
		}
		types := strings.Split(typ, " or ")
		if got := jsonType(v); !slices.Contains(types, got) && !(got == "int" && slices.Contains(types, "float")) {
			t.Errorf("%s is a JSON %s, but docs/summary.md says %s", path, got, typ)
		}
	}
	for path := range documented {
		if _, ok := written[path]; !ok {
			t.Errorf("docs/summary.md documents %s, which the summary does not write", path)
		}
	}

	// The fields documented "or null" are null when they do not apply.
	bare := &Summary{Jobs: 1}
	nulls := map[string]any{}
	flattenJSON(t, "", roundTrip(t, bare), nulls)
	for path, v := range nulls {
		if v == nil && !strings.HasSuffix(documented[path], "or null") {
			t.Errorf("%s is null, but docs/summary.md says it is a %s", path, documented[path])
		}
	}
}

// roundTrip encodes s's JSON form and decodes it generically.
func roundTrip(t *testing.T, s *Summary) map[string]any {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// flattenJSON records every field under prefix by its path: objects as
// a.b, arrays as a[] (their first element's fields as a[].b); maps keyed by
// data (http.status, ...) are leaves.
func flattenJSON(t *testing.T, prefix string, v any, out map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		if prefix != "" {
			out[prefix] = x
		}
		if prefix == "http.status" || prefix == "http.no_response_causes" {
			return
		}
		for k, sub := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flattenJSON(t, p, sub, out)
		}
	case []any:
		out[prefix] = x
		if len(x) > 0 {
			if _, ok := x[0].(map[string]any); ok {
				for k, sub := range x[0].(map[string]any) {
					flattenJSON(t, prefix+"[]."+k, sub, out)
				}
			}
		}
	default:
		out[prefix] = x
	}
}

// jsonType names v's JSON type as docs/summary.md does.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "string"
	case float64:
		if x == math.Trunc(x) {
			return "int"
		}
		return "float"
	case []any:
		return "array"
	}
	return "object"
}
