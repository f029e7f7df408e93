package quota

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/localstore"
	"github.com/pace-cli/pace/throttle/redisrate"
)

func TestLocalViewText(t *testing.T) {
	r, err := throttle.ParseRule("10/s")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	since := now.Add(-90 * time.Second)
	q := &localstore.Quota{Key: "gh", Path: "/s/gh.db", Spec: "10/s", GlobalJobs: 2, Now: now, Next: now.Add(1500 * time.Millisecond),
		Rules: []throttle.RuleStats{{Rule: r, Used: 10, Usage: 1}},
		Slots: []localstore.Slot{{Index: 0, PID: 42, Since: since, Alive: true}, {Index: 1, Alive: false}}}
	v := FromLocal(q)
	if v.NextIn != 1.5 || v.Store != "local" || len(v.Slots) != 2 {
		t.Errorf("FromLocal = %+v, want next in 1.5s, store local, 2 slots", v)
	}
	var b bytes.Buffer
	v.WriteText(&b)
	for _, want := range []string{
		"quota gh (local /s/gh.db)\n  rules      10/s\n",
		"  rule 10/s  10/10 used  100%\n",
		"  next call  in 1.5s (",
		"  slots      1 of 2 held\n",
		"  slot 0     pid 42, since ",
		"(1m30s ago), alive\n",
		"  slot 1     holder unknown, dead: free\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text:\n%s\nwant %q", b.String(), want)
		}
	}
}

func TestRedisViewAndWrite(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	q := &redisrate.Quota{Key: "api", Now: now, Next: now.Add(-time.Second), Expired: true,
		Leases: []redisrate.Lease{{ID: "l1", Holder: "host:7", Expires: now.Add(3 * time.Second)}}}
	v := FromRedis(q, "redis://cache:6379")
	if v.NextIn != 0 || !v.Idle || v.URL != "redis://cache:6379" {
		t.Errorf("FromRedis = %+v, want next in 0, idle, the URL", v)
	}
	var b bytes.Buffer
	if err := Write(&b, []View{v}, false, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"quota api (redis redis://cache:6379)\n", "  rules     none recorded: no call in any window\n",
		"  slots     1 held\n  lease l1  process host:7, expires in 3s unless renewed\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text:\n%s\nwant %q", b.String(), want)
		}
	}

	// JSON: one object, or an array when listing (empty, not null).
	b.Reset()
	if err := Write(&b, []View{v}, true, false); err != nil {
		t.Fatal(err)
	}
	var one map[string]any
	if err := json.Unmarshal(b.Bytes(), &one); err != nil || one["key"] != "api" || one["store"] != "redis" {
		t.Errorf("JSON object %s (%v), want key api in redis", b.String(), err)
	}
	b.Reset()
	if err := Write(&b, []View{}, true, true); err != nil || strings.TrimSpace(b.String()) != "[]" {
		t.Errorf("JSON list of none = %q (%v), want []", b.String(), err)
	}
	b.Reset()
	if err := Write(&b, nil, true, false); err != nil || b.Len() != 0 {
		t.Errorf("JSON of no quota = %q (%v), want nothing", b.String(), err)
	}
}

func TestWriteReset(t *testing.T) {
	var b strings.Builder
	if err := WriteReset(&b, View{Key: "gh", Store: "redis", URL: "redis://h:1", Spec: "5/s"}); err != nil {
		t.Fatal(err)
	}
	if want := `{"key":"gh","store":"redis","url":"redis://h:1","reset":true}` + "\n"; b.String() != want {
		t.Errorf("WriteReset = %q, want %q", b.String(), want)
	}
}
