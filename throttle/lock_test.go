package throttle

import (
	"runtime"
	"sync"
	"testing"
)

// TestLock has goroutines increment a plain counter under the lock, some
// yielding while they hold it so that others park: every increment must
// count (the race detector checks the exclusion too), and every
// goroutine must finish (no waiter left parked while the lock is free).
func TestLock(t *testing.T) {
	const workers, rounds = 16, 2000
	m := newLock()
	var wg sync.WaitGroup
	n := 0
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				m.Lock()
				n++
				if (w+i)%7 == 0 {
					runtime.Gosched()
				}
				m.Unlock()
			}
		})
	}
	wg.Wait()
	if n != workers*rounds {
		t.Fatalf("n = %d, want %d", n, workers*rounds)
	}
	if s := m.state.Load(); s != 0 {
		t.Errorf("state after all unlocked = %#x, want 0", s)
	}
}
