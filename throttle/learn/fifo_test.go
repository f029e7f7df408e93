package learn

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// Calls waiting on a learned rule are admitted in the order they came,
// as the backend behind admits them (first come, first served): they
// used to wake together when the rule had room and race for it, so that
// one could lose round after round while later ones went.
func TestLearnerAdmitsWaitersInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(mem(t), nil, Options{Adopt: true})
		a, _ := l.Admit(context.Background(), 1)
		a.Release()
		l.Observe(a, Outcome{Status: 200, Policy: []throttle.Rule{{N: 1, Window: 10 * time.Millisecond}}, PolicyHeader: "RateLimit-Policy"})
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		const n = 40
		for i := range n {
			wg.Go(func() {
				a, err := l.Admit(context.Background(), 1)
				if err != nil {
					t.Error(err)
					return
				}
				a.Release()
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
			})
			synctest.Wait() // waiting now, before the next comes
			time.Sleep(time.Microsecond)
		}
		wg.Wait()
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(order, want) {
			t.Errorf("admitted in the order %v, want the order they came", order)
		}
	})
}
