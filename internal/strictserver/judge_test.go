package strictserver

import (
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// TestJudge: a refusal is the client's when the calls counted against it
// were admitted within the window plus the margin, or when nothing the
// server accepted explains it; it is excused when they were admitted far
// enough apart and their lags differ by more than the margin. Admissions
// that break a widened rule are a fault even without a refusal.
func TestJudge(t *testing.T) {
	const ms = time.Millisecond
	rules := []throttle.Rule{{N: 2, Window: 100 * ms}}
	costRules := []throttle.Rule{{N: 10, Window: 100 * ms, Cost: true}}
	// sent is a call admitted at adm and arriving at arr (ms after t0).
	sent := func(name string, adm, arr time.Duration, refused bool) Sent {
		return Sent{Name: name, Admitted: t0.Add(adm * ms), Arrived: t0.Add(arr * ms), Cost: 1, Refused: refused}
	}
	costly := func(s Sent, cost int) Sent { s.Cost = cost; return s }
	tests := []struct {
		name          string
		rules         []throttle.Rule
		sent          []Sent
		faults, excus []string // substrings, one per message, in order
	}{
		{
			name:  "kept: admitted a window and the margin apart, arrived so",
			rules: rules,
			sent:  []Sent{sent("/1", 0, 1, false), sent("/2", 0, 1, false), sent("/3", 120, 121, false)},
		},
		{
			// Calls 1 and 2 left 25-30ms late, call 3 at once: the
			// server saw them 96ms apart, but pace kept the window plus 20ms.
			name:  "excused: lags 29ms apart, beyond the 20ms margin",
			rules: rules,
			sent:  []Sent{sent("/1", 0, 30, false), sent("/2", 0, 25, false), sent("/3", 120, 121, true)},
			excus: []string{"/3 refused by 2/100ms: it and the 2 calls the server counted before it were admitted over 120ms (the window plus 20ms, the margin 20ms) but arrived within 96ms; their lags ran from 1ms (/3) to 30ms (/1), 29ms apart"},
		},
		{
			// Admitted only 110ms apart: lags 11ms apart, within the
			// margin, are enough to refuse; the limiter broke its rule.
			name:   "fault: admitted within the window plus the margin",
			rules:  rules,
			sent:   []Sent{sent("/1", 0, 12, false), sent("/2", 0, 12, false), sent("/3", 110, 111, true)},
			faults: []string{"admissions break 2/100ms widened by the margin 20ms: 1 calls too many, the first /3", "/3 refused by 2/100ms: it and the 2 calls the server counted before it were admitted within 110ms, less than the window plus the margin 120ms"},
		},
		{
			name:   "fault without a refusal: the admissions alone break the widened rule",
			rules:  rules,
			sent:   []Sent{sent("/1", 0, 1, false), sent("/2", 0, 1, false), sent("/3", 101, 102, false)},
			faults: []string{"admissions break 2/100ms widened by the margin 20ms: 1 calls too many, the first /3 (peak 3 in a window)"},
		},
		{
			name:   "fault: the accepted calls do not explain the refusal",
			rules:  rules,
			sent:   []Sent{sent("/1", 0, 1, false), sent("/2", 200, 201, true)},
			faults: []string{"/2 refused, but the calls the server accepted before it keep every rule: the record misses some"},
		},
		{
			// Only the latest arrivals that make it one too many count:
			// /1 is no part of the refusal of /4, /2 and /3 are.
			name:  "excused: the calls counted are the latest arrivals",
			rules: rules,
			sent:  []Sent{sent("/1", 0, 1, false), sent("/2", 130, 190, false), sent("/3", 140, 170, false), sent("/4", 260, 261, true)},
			excus: []string{"/4 refused by 2/100ms: it and the 2 calls the server counted before it were admitted over 130ms (the window plus 30ms, the margin 20ms) but arrived within 91ms; their lags ran from 1ms (/4) to 60ms (/2)"},
		},
		{
			name:  "excused under a cost rule: 6 + 5 is past 10",
			rules: costRules,
			sent:  []Sent{costly(sent("/a", 0, 40, false), 6), costly(sent("/b", 125, 126, true), 5)},
			excus: []string{"/b refused by cost:10/100ms: it and the 1 calls the server counted before it were admitted over 125ms (the window plus 25ms, the margin 20ms) but arrived within 86ms; their lags ran from 1ms (/b) to 40ms (/a), 39ms apart"},
		},
		{
			name:  "kept under a cost rule: 5 + 5 fits",
			rules: costRules,
			sent:  []Sent{costly(sent("/a", 0, 1, false), 5), costly(sent("/b", 0, 1, false), 5)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.rules, 20*ms, tt.sent)
			match(t, "faults", v.Faults, tt.faults)
			match(t, "excused", v.Excused, tt.excus)
		})
	}
}

// match checks that got holds one message per want, each containing it.
func match(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("Judge %s = %q, want %d messages like %q", what, got, len(want), want)
	}
	for i := range got {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("Judge %s[%d] = %q, want it to contain %q", what, i, got[i], want[i])
		}
	}
}
