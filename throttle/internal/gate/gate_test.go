package gate_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/internal/gate"
)

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		closed := make(chan struct{})
		start := time.Now()
		if err := gate.Sleep(context.Background(), closed, time.Second); err != nil || time.Since(start) != time.Second {
			t.Errorf("Sleep(1s) = %v after %v, want nil after 1s", err, time.Since(start))
		}
		if err := gate.Sleep(context.Background(), closed, -time.Second); err != nil || time.Since(start) != time.Second {
			t.Errorf("Sleep(-1s) = %v, slept %v; want nil at once", err, time.Since(start)-time.Second)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := gate.Sleep(ctx, closed, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Sleep with a 100ms context = %v, want its deadline", err)
		}
		go func() {
			time.Sleep(time.Second)
			close(closed)
		}()
		if err := gate.Sleep(context.Background(), closed, time.Hour); !errors.Is(err, throttle.ErrClosed) {
			t.Errorf("Sleep while the backend closes = %v, want ErrClosed", err)
		}
	})
}

func TestUsable(t *testing.T) {
	closed := make(chan struct{})
	if err := gate.Usable(context.Background(), closed); err != nil {
		t.Errorf("Usable = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := gate.Usable(ctx, closed); !errors.Is(err, context.Canceled) {
		t.Errorf("Usable(cancelled) = %v, want context.Canceled", err)
	}
	close(closed)
	if err := gate.Usable(context.Background(), closed); !errors.Is(err, throttle.ErrClosed) {
		t.Errorf("Usable after close = %v, want ErrClosed", err)
	}
}

func TestJitter(t *testing.T) {
	for range 1000 {
		if j := gate.Jitter(time.Second, 10*time.Millisecond); j < 0 || j > 10*time.Millisecond {
			t.Fatalf("Jitter(1s, 10ms) = %v, want within [0, 10ms]", j)
		}
		if j := gate.Jitter(100*time.Millisecond, 10*time.Millisecond); j < 0 || j > 5*time.Millisecond {
			t.Fatalf("Jitter(100ms, 10ms) = %v, want within [0, 5%% of 100ms]", j)
		}
	}
	if j := gate.Jitter(time.Second, 0); j != 0 {
		t.Errorf("Jitter(1s, 0) = %v, want 0", j)
	}
}

func TestPauseExtend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p gate.Pause
		now := time.Now()
		if !p.Extend(now.Add(time.Second), "429") || p.Reason != "429" || !p.Until.Equal(now.Add(time.Second)) {
			t.Errorf("first pause: %+v, want until 1s, reason 429", p)
		}
		if p.Extend(now.Add(500*time.Millisecond), "shorter") || p.Reason != "429" {
			t.Errorf("a shorter pause changed it: %+v", p)
		}
		if p.Extend(now.Add(-time.Second), "past") {
			t.Errorf("a pause in the past changed it: %+v", p)
		}
		if !p.Extend(now.Add(2*time.Second), "503") || p.Reason != "503" {
			t.Errorf("a longer pause: %+v, want until 2s, reason 503", p)
		}
	})
}
