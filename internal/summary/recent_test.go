package summary

import (
	"slices"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

func TestRecent(t *testing.T) {
	if r := NewRecent([]throttle.Rule{{N: 3, Window: time.Second}, {N: 1 << 20, Window: time.Hour}}); r.Keep() != maxRecent {
		t.Errorf("Keep = %d, want the largest N up to %d", r.Keep(), maxRecent)
	}
	var none Recent
	none.Add(throttle.Call{At: time.Unix(1, 0)})
	if none.Keep() != 0 || len(none.Calls()) != 0 {
		t.Errorf("the zero Recent remembered %v", none.Calls())
	}
	r := NewRecent([]throttle.Rule{{N: 3, Window: time.Second}})
	// Seeded out of order: the newest 3 of 4 stay.
	r.Seed([]throttle.Call{{At: time.Unix(3, 0)}, {At: time.Unix(0, 0)}, {At: time.Unix(2, 0)}, {At: time.Unix(1, 0)}})
	for i := 4; i < 6; i++ {
		r.Add(throttle.Call{At: time.Unix(int64(i), 0)})
	}
	got := r.Calls()
	slices.SortFunc(got, func(a, b throttle.Call) int { return a.At.Compare(b.At) })
	if len(got) != 3 || !got[0].At.Equal(time.Unix(3, 0)) || !got[2].At.Equal(time.Unix(5, 0)) {
		t.Errorf("Calls = %v, want the admissions at 3, 4 and 5", got)
	}
}
