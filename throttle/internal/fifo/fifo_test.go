package fifo

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/pace-cli/pace/throttle"
)

// Waiters get the lock in the order they asked; one that gives up while
// waiting is skipped, and one handed the lock as it gives up passes it on.
func TestLockFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Lock
		never := make(chan struct{})
		if err := q.Lock(context.Background(), never); err != nil {
			t.Fatal(err)
		}
		var (
			mu    sync.Mutex
			order []int
			wg    sync.WaitGroup
		)
		ctx2, cancel2 := context.WithCancel(context.Background())
		for i := range 4 {
			ctx := context.Background()
			if i == 2 {
				ctx = ctx2
			}
			wg.Go(func() {
				if err := q.Lock(ctx, never); err != nil {
					if i != 2 || !errors.Is(err, context.Canceled) {
						t.Errorf("waiter %d: %v", i, err)
					}
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				q.Unlock()
			})
			synctest.Wait() // waiter i queued before i+1
		}
		if n := q.Queued(); n != 4 {
			t.Fatalf("Queued = %d, want 4", n)
		}
		cancel2()
		synctest.Wait()
		if n := q.Queued(); n != 3 {
			t.Fatalf("Queued after a waiter gave up = %d, want 3", n)
		}
		q.Unlock()
		wg.Wait()
		if want := []int{0, 1, 3}; len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
			t.Errorf("order %v, want %v", order, want)
		}
	})
}

func TestLockClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var q Lock
		closed := make(chan struct{})
		if err := q.Lock(context.Background(), closed); err != nil {
			t.Fatal(err)
		}
		errc := make(chan error)
		go func() { errc <- q.Lock(context.Background(), closed) }()
		synctest.Wait()
		close(closed)
		if err := <-errc; !errors.Is(err, throttle.ErrClosed) {
			t.Errorf("Lock after close = %v, want ErrClosed", err)
		}
		// The holder still holds it; unlocking leaves it free.
		q.Unlock()
		if err := q.Lock(context.Background(), make(chan struct{})); err != nil {
			t.Errorf("Lock of a free lock = %v", err)
		}
	})
}
