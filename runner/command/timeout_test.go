package command

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestTimeoutsHold: a held timeout keeps the time it had left and spends
// it once released; one that fired before the hold stays fired; one
// started while the others are held waits with them (its job is stopped
// with theirs).
func TestTimeoutsHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ts timeouts
		timedOut := func(ctx context.Context) bool {
			synctest.Wait()
			return errors.Is(context.Cause(ctx), errTimeout)
		}
		held, end := ts.start(context.Background(), time.Second)
		defer end()
		fired, end2 := ts.start(context.Background(), 100*time.Millisecond)
		defer end2()

		time.Sleep(400 * time.Millisecond)
		if !timedOut(fired) || timedOut(held) {
			t.Fatalf("at 400ms: 100ms timeout fired %v, 1s timeout fired %v; want true, false", timedOut(fired), timedOut(held))
		}
		ts.hold()
		during, end3 := ts.start(context.Background(), 500*time.Millisecond)
		defer end3()
		time.Sleep(10 * time.Second)
		if timedOut(held) {
			t.Fatal("a held timeout fired while held")
		}
		if timedOut(during) {
			t.Fatal("a timeout started while the others were held ran")
		}
		if !timedOut(fired) {
			t.Fatal("a fired timeout was taken back by the hold")
		}
		ts.release()
		time.Sleep(499 * time.Millisecond)
		if timedOut(during) {
			t.Fatal("started held with 500ms, fired 499ms after the release")
		}
		time.Sleep(time.Millisecond)
		if !timedOut(during) {
			t.Fatal("started held with 500ms, not fired 500ms after the release")
		}
		time.Sleep(99 * time.Millisecond)
		if timedOut(held) {
			t.Fatal("released with 600ms left, fired after 599ms")
		}
		time.Sleep(time.Millisecond)
		if !timedOut(held) {
			t.Fatal("released with 600ms left, not fired after 600ms")
		}

		// Ended, a timeout is no longer held or released, and its
		// context is cancelled without the timeout's cause.
		ctx, end4 := ts.start(context.Background(), time.Second)
		end4()
		ts.hold()
		ts.release()
		if len(ts.m) != 3 || ts.held {
			t.Errorf("%d timeouts kept, want the 3 not ended", len(ts.m))
		}
		if ctx.Err() == nil || timedOut(ctx) {
			t.Errorf("an ended timeout's context: err %v, cause %v", ctx.Err(), context.Cause(ctx))
		}
	})
}
