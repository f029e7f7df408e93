package runner

import (
	"testing"
	"time"
)

func TestConnRetryDelay(t *testing.T) {
	for _, tt := range []struct {
		r    Result
		want time.Duration
	}{
		{Result{Job: Job{Attempt: 1}, ExitCode: 1}, 0},
		{Result{Job: Job{Attempt: 1}, HTTP: &HTTPInfo{StatusCode: 429}}, 0}, // the server paused the backend
		{Result{Job: Job{Attempt: 1}, HTTP: &HTTPInfo{Conn: "refused"}}, 250 * time.Millisecond},
		{Result{Job: Job{Attempt: 3}, HTTP: &HTTPInfo{Conn: "reset"}}, time.Second},
		{Result{Job: Job{Attempt: 20}, HTTP: &HTTPInfo{Conn: "dns"}}, 30 * time.Second},
	} {
		if got := ConnRetryDelay(&tt.r); got != tt.want {
			t.Errorf("ConnRetryDelay(attempt %d, %+v) = %v, want %v", tt.r.Job.Attempt, tt.r.HTTP, got, tt.want)
		}
	}
}
