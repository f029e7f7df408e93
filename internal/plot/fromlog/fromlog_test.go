package fromlog

import (
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/internal/plot"
)

// Rows become calls with their outcomes: a 429 refused (and the gap to the
// next admission its pause), a failed row followed by one of the same item
// retried, the last failed; a redirect's row a success of no time, so
// that the calls in flight count its attempt's slot once.
func TestCalls(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	rows := []joblog.Entry{
		{Seq: 1, Start: at(0), Runtime: 100 * time.Millisecond, Exit: 429},
		{Seq: 2, Start: at(50), Runtime: 10 * time.Millisecond, Exit: joblog.ExitHop, Command: "# redirect followed: GET https://b.example/2"},
		{Seq: 2, Start: at(20), Runtime: 80 * time.Millisecond, Exit: 0, Command: "GET https://a.example/2"},
		{Seq: 1, Start: at(1100), Runtime: 5 * time.Millisecond, Exit: 500},
		{Seq: 1, Start: at(1200), Runtime: 5 * time.Millisecond, Exit: 500, Send: 3},
	}
	calls, pauses := Calls(rows)
	want := []plot.Call{
		{Start: at(0), Runtime: 100 * time.Millisecond, Cost: 1, Outcome: plot.Refused},
		{Start: at(50), Cost: 1},
		{Start: at(20), Runtime: 80 * time.Millisecond, Cost: 1},
		{Start: at(1100), Runtime: 5 * time.Millisecond, Cost: 1, Outcome: plot.Retried},
		{Start: at(1200), Runtime: 5 * time.Millisecond, Cost: 3, Outcome: plot.Failed},
	}
	if len(calls) != len(want) {
		t.Fatalf("Calls = %+v, want %+v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Errorf("call %d = %+v, want %+v", i, calls[i], want[i])
		}
	}
	if len(pauses) != 1 || !pauses[0].From.Equal(at(100)) || !pauses[0].To.Equal(at(1100)) {
		t.Errorf("pauses = %+v, want one from the refusal's end (+100ms) to the next admission (+1100ms)", pauses)
	}
}
