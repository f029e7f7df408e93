package throttle_test

import (
	"context"
	"testing"

	. "github.com/pace-cli/pace/throttle"
)

// BenchmarkAdmitN3Rules is uncontended weighted admission under 3 rules
// through the Backend contract, as the pool admits: Admit, then Release.
func BenchmarkAdmitN3Rules(b *testing.B) {
	rules, err := ParseRules(weightedRules)
	if err != nil {
		b.Fatal(err)
	}
	var be Backend
	if be, err = New(Options{Rules: rules}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		a, err := be.Admit(ctx, 7)
		if err != nil {
			b.Fatal(err)
		}
		a.Release()
	}
}
