package runner

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/backend"
)

// queueLimiter queues its callers, says when each holds its place
// (backend.WithQueued), and admits every caller queued whenever the test
// calls admitAll. It records the costs in the order the callers came.
type queueLimiter struct {
	mu      sync.Mutex
	came    []int
	waiting []chan struct{}
	peak    int
}

func (l *queueLimiter) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	ch := make(chan struct{})
	l.mu.Lock()
	l.came = append(l.came, cost)
	l.waiting = append(l.waiting, ch)
	l.peak = max(l.peak, len(l.waiting))
	l.mu.Unlock()
	backend.Queued(ctx)
	select {
	case <-ch:
		return backend.NewAdmission(nil, 0, 0, time.Now(), cost, 0, 0), nil
	case <-ctx.Done():
		return throttle.Admission{}, ctx.Err()
	}
}

// admitAll admits every caller waiting now.
func (l *queueLimiter) admitAll() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ch := range l.waiting {
		close(ch)
	}
	n := len(l.waiting)
	l.waiting = nil
	return n
}

// With a backend that says when a caller holds its place, the pool keeps
// as many admissions waiting as it has jobs free, asked for in input
// order, so that the backend can decide for them together.
func TestPoolQueuesAdmissionsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := &queueLimiter{}
		ex := &fakeExec{
			prep: func(job *Job) error { job.Cost, _ = strconv.Atoi(job.Item); return nil },
			run: func(ctx context.Context, job *Job) *Result {
				sleepCtx(ctx, 100*time.Millisecond)
				return &Result{}
			},
		}
		p := newPool(t, Options{Jobs: 4, Executor: ex, Limiter: lim})
		var items []string
		for i := range 10 {
			items = append(items, strconv.Itoa(i+1))
		}
		done := make(chan error)
		go func() { done <- p.Run(context.Background(), feed(items...)) }()
		var batches []int
		for {
			synctest.Wait()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run = %v", err)
				}
				if want := []int{4, 4, 2}; !slices.Equal(batches, want) {
					t.Errorf("admitted together %v, want %v", batches, want)
				}
				if want := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}; !slices.Equal(lim.came, want) {
					t.Errorf("callers came in the order %v, want %v", lim.came, want)
				}
				return
			default:
			}
			if n := lim.admitAll(); n > 0 {
				batches = append(batches, n)
			}
			time.Sleep(time.Second)
		}
	})
}
