package runner

import (
	"errors"
	"testing"
	"time"
)

func TestHTTPRetryDelay(t *testing.T) {
	for _, tt := range []struct {
		r    Result
		want time.Duration
	}{
		{Result{Job: Job{Attempt: 1}, ExitCode: 1}, 0},
		{Result{Job: Job{Attempt: 1}, HTTP: &HTTPInfo{StatusCode: 429}}, 0}, // the server paused the backend
		{Result{Job: Job{Attempt: 1}, HTTP: &HTTPInfo{Conn: "refused"}}, 250 * time.Millisecond},
		{Result{Job: Job{Attempt: 3}, HTTP: &HTTPInfo{Conn: "reset"}}, time.Second},
		{Result{Job: Job{Attempt: 20}, HTTP: &HTTPInfo{Conn: "dns"}}, 30 * time.Second},
		{Result{Job: Job{Attempt: 1}, HTTP: &HTTPInfo{StatusCode: 503}}, 0},
		{Result{Job: Job{Attempt: 1}, HTTP: &HTTPInfo{StatusCode: 500, PauseUntil: time.Unix(1, 0)}}, 0}, // paused by its headers
		{Result{Job: Job{Attempt: 1}, HTTP: &HTTPInfo{StatusCode: 500}}, 250 * time.Millisecond},
		{Result{Job: Job{Attempt: 2}, HTTP: &HTTPInfo{StatusCode: 502}}, 500 * time.Millisecond},
		{Result{Job: Job{Attempt: 1}, HTTP: &HTTPInfo{StatusCode: 408}}, 250 * time.Millisecond},
		{Result{Job: Job{Attempt: 1}, HTTP: &HTTPInfo{StatusCode: 200}, Err: errors.New("body cut short")}, 250 * time.Millisecond},
	} {
		if got := HTTPRetryDelay(&tt.r); got != tt.want {
			t.Errorf("HTTPRetryDelay(attempt %d, %+v) = %v, want %v", tt.r.Job.Attempt, tt.r.HTTP, got, tt.want)
		}
	}
}
