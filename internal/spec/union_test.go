package spec

import (
	"slices"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// TestUnion: exact duplicates go, in first order; nothing else.
func TestUnion(t *testing.T) {
	r := func(n int, w time.Duration) throttle.Rule { return throttle.Rule{N: n, Window: w} }
	c := func(n int, w time.Duration) throttle.Rule { return throttle.Rule{N: n, Window: w, Cost: true} }
	s, m := time.Second, time.Minute
	for _, tt := range []struct {
		in, want []throttle.Rule
	}{
		{nil, nil},
		{[]throttle.Rule{r(5, s)}, []throttle.Rule{r(5, s)}},
		// Exact duplicates go, the first of each stays where it was.
		{[]throttle.Rule{r(5, s), r(5, s)}, []throttle.Rule{r(5, s)}},
		{[]throttle.Rule{r(500, m), r(5, s), r(500, m), r(5, s)}, []throttle.Rule{r(500, m), r(5, s)}},
		// A cost rule is not the count rule with the same numbers.
		{[]throttle.Rule{r(5, s), c(5, s)}, []throttle.Rule{r(5, s), c(5, s)}},
		// A looser rule of the same window is kept: only exact duplicates
		// are dropped.
		{[]throttle.Rule{r(5, s), r(10, s)}, []throttle.Rule{r(5, s), r(10, s)}},
	} {
		in := slices.Clone(tt.in)
		if got := Union(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Union(%v) = %v, want %v", tt.in, got, tt.want)
		}
		if !slices.Equal(tt.in, in) {
			t.Errorf("Union changed its argument: %v, was %v", tt.in, in)
		}
		if got := Union(tt.want); !slices.Equal(got, tt.want) {
			t.Errorf("Union(%v) = %v: not idempotent", tt.want, got)
		}
	}
}

// TestUnionOfLists: -r's rules then --cost-rate's, each once.
func TestUnionOfLists(t *testing.T) {
	a := throttle.Rule{N: 5, Window: time.Second, Cost: true}
	b := throttle.Rule{N: 500, Window: time.Minute}
	if got, want := Union([]throttle.Rule{b, a}, []throttle.Rule{a, b}, nil), []throttle.Rule{b, a}; !slices.Equal(got, want) {
		t.Errorf("Union = %v, want %v", got, want)
	}
}
