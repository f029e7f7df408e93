package summary

import (
	"maps"
	"testing"

	"github.com/pace-cli/pace/runner"
)

func TestHTTPCounts(t *testing.T) {
	var c HTTPCounts
	var s Snapshot
	c.Fill(&s)
	if s.HTTP || s.Statuses != nil || s.Conns != nil {
		t.Errorf("no attempt: %+v, want no HTTP counts", s)
	}
	for _, h := range []*runner.HTTPInfo{
		{StatusCode: 200, Bytes: 100}, {StatusCode: 200, Bytes: 50}, {StatusCode: 429},
		{Conn: "refused"}, {Conn: "refused"}, {}, // no response, cause unknown
	} {
		c.Add(h)
	}
	c.Fill(&s)
	if !s.HTTP || !maps.Equal(s.Statuses, map[string]int64{"200": 2, "429": 1}) || s.NoResponse != 3 ||
		!maps.Equal(s.Conns, map[string]int64{"refused": 2}) || s.Bytes != 150 {
		t.Errorf("counts %+v, want 200 ×2, 429 ×1, 3 without response (2 refused), 150 bytes", s)
	}
	// The snapshot is a copy: counting on leaves it as it was.
	c.Add(&runner.HTTPInfo{Conn: "refused"})
	if s.Conns["refused"] != 2 {
		t.Errorf("the snapshot changed with the counts: %v", s.Conns)
	}
}
