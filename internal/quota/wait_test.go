package quota

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/localstore"
)

func TestWaitText(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)
	rules := ruleViews([]throttle.RuleStats{{Rule: throttle.Rule{N: 10, Window: time.Second}, Used: 3, Usage: 0.3},
		{Rule: throttle.Rule{N: 5, Window: time.Hour}, Used: 5, Usage: 1}})
	slots := func(alive ...bool) []SlotView {
		var s []SlotView
		for _, a := range alive {
			s = append(s, SlotView{Alive: a})
		}
		return s
	}
	for _, tt := range []struct {
		store string
		next  time.Time
		jobs  int
		slots []SlotView
		want  string
	}{
		{"local", now, 0, nil, ""}, // goes at once
		{"local", now.Add(47 * time.Minute), 0, nil, `waiting for quota "q" (local /s/q.db): 5/h is full (5/5 used); the next call may go at 03:51:05 (in 47m0s)`},
		{"redis", now.Add(30 * time.Hour), 0, nil, `waiting for quota "q" (redis redis://h:1): 5/h is full (5/5 used); the next call may go at 2026-01-03 09:04:05 (in 30h0m0s)`},
		{"local", now, 2, slots(true, true), `waiting for quota "q" (local /s/q.db): all 2 slots of --global-jobs are held; the call goes when one comes back`},
		{"local", now, 2, slots(true, false), ""}, // a slot whose holder died is free
	} {
		v := View{Key: "q", Store: tt.store, Path: "/s/q.db", URL: "redis://h:1", Now: now, Next: tt.next, Rules: rules, GlobalJobs: tt.jobs, Slots: tt.slots}
		if got := v.WaitText(); got != tt.want {
			t.Errorf("WaitText(%s, next %v, jobs %d, slots %v) = %q, want %q", tt.store, tt.next.Sub(now), tt.jobs, tt.slots, got, tt.want)
		}
	}
}

// TestLookLocal: Look reads a local quota as pace quota show does, and
// fails for a quota the store does not have.
func TestLookLocal(t *testing.T) {
	dir := t.TempDir()
	st, err := localstore.Open(context.Background(), localstore.Options{Dir: dir, Key: "k", Rules: []throttle.Rule{{N: 1, Window: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := throttle.Do(context.Background(), st, 1, func(*throttle.Admission) error { return nil }); err != nil {
		t.Fatal(err)
	}
	v, err := Look(context.Background(), "", dir, "k")
	if err != nil || v.Store != "local" || v.Key != "k" || len(v.Rules) != 1 || v.Rules[0].Used != 1 || !v.Next.After(v.Now) {
		t.Errorf("Look = %+v, %v; want the local quota k with its one call", v, err)
	}
	if _, err := Look(context.Background(), "", dir, "none"); err == nil {
		t.Errorf("Look of a quota the store lacks = nil error")
	}
}

// A quota's name from elsewhere (Redis keys an older pace accepted) is
// shown quoted when it holds what a terminal would act on.
func TestWriteTextQuotesAStrangeName(t *testing.T) {
	var b strings.Builder
	(&View{Key: "evil\n\x1b[31mkey", Store: "redis", URL: "redis://127.0.0.1:6379"}).WriteText(&b)
	if first, _, _ := strings.Cut(b.String(), "\n"); first != `quota "evil\n\x1b[31mkey" (redis redis://127.0.0.1:6379)` {
		t.Errorf("first line %q, want the name quoted", first)
	}
	b.Reset()
	(&View{Key: "api-1", Store: "local", Path: "/s/api-1.db"}).WriteText(&b)
	if !strings.HasPrefix(b.String(), "quota api-1 (local /s/api-1.db)\n") {
		t.Errorf("a plain name: %q, want it as it is", b.String())
	}
}
