package interrupt

import (
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
)

// TestUntilResult: work's result when it ends, with no signal; late is
// for a result that comes after a signal only.
func TestUntilResult(t *testing.T) {
	late := func(int) { t.Error("late called for a result Until returned") }
	if v, sig, stopped := Until(nil, func() int { return 7 }, late); v != 7 || sig != nil || stopped {
		t.Errorf("Until(nil, 7) = %d, %v, %v; want 7, no signal, not stopped", v, sig, stopped)
	}
	sigs := make(chan os.Signal, 1)
	if v, sig, stopped := Until(sigs, func() int { return 7 }, late); v != 7 || sig != nil || stopped {
		t.Errorf("Until(no signal, 7) = %d, %v, %v; want 7, no signal, not stopped", v, sig, stopped)
	}
}

// TestUntilSignalFirst: a signal while work blocks (a FIFO's open waiting
// for its writer) ends the wait without work; what work returns later
// goes to late, once, and without late nothing is left waiting.
func TestUntilSignalFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sigs := make(chan os.Signal, 1)
		sigs <- os.Interrupt
		release := make(chan struct{})
		var closed atomic.Int32
		v, sig, stopped := Until(sigs, func() int { <-release; return 7 }, func(v int) {
			if v != 7 {
				t.Errorf("late(%d), want late(7): what work returned", v)
			}
			closed.Add(1)
		})
		if v != 0 || sig != os.Interrupt || !stopped {
			t.Errorf("Until(SIGINT while work blocks) = %d, %v, %v; want 0, interrupt, stopped", v, sig, stopped)
		}
		synctest.Wait()
		if n := closed.Load(); n != 0 {
			t.Fatalf("late called %d times while work still blocks", n)
		}
		close(release)
		synctest.Wait()
		if n := closed.Load(); n != 1 {
			t.Errorf("work returned after the signal: late called %d times, want once", n)
		}

		sigs <- syscall.SIGTERM
		release = make(chan struct{})
		if _, sig, stopped := Until(sigs, func() int { <-release; return 7 }, nil); sig != syscall.SIGTERM || !stopped {
			t.Errorf("Until(SIGTERM, nil late) = %v, %v; want SIGTERM, stopped", sig, stopped)
		}
		close(release) // work's goroutine ends: its result has room
	})
}

// TestUntilTie: when the result and a signal are both there, the result
// wins and the signal comes with it, taken from sigs, whichever of the
// two the select picked (wait looks for the other either way); late is
// not called. The tie is made for wait directly: through Until it depends
// on the scheduler. A signal taken with an input that had opened used to
// stop pace with "stopped before anything ran" where the run says "SIGINT:
// dry run stopped" (faults_signals.txtar, under load); a pace audit
// stopped on such a signal or gave its verdict, at random.
func TestUntilTie(t *testing.T) {
	late := func(int) { t.Error("late called for a result Until returned") }
	for range 200 { // the select's choice is random: both ways, all but surely
		done, sigs := make(chan int, 1), make(chan os.Signal, 1)
		done <- 7
		sigs <- os.Interrupt
		v, sig, stopped := wait(done, sigs, late)
		if v != 7 || sig != os.Interrupt || stopped {
			t.Fatalf("wait(result and SIGINT both there) = %d, %v, %v; want 7, interrupt, not stopped", v, sig, stopped)
		}
	}
}

// TestUnread: a signal given back is delivered first, then the signals
// that come after it, in order.
func TestUnread(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sigs := make(chan os.Signal, 2)
		ch := Unread(sigs, os.Interrupt)
		sigs <- syscall.SIGTERM
		sigs <- syscall.SIGHUP
		for _, want := range []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP} {
			if got := <-ch; got != want {
				t.Errorf("after Unread(SIGINT), a SIGTERM and a SIGHUP, the channel gives %v, want %v", got, want)
			}
		}
		close(sigs) // the forwarding goroutine ends
		synctest.Wait()
		select {
		case s := <-ch:
			t.Errorf("the channel gives %v after the signals sent, want nothing", s)
		default:
		}
	})
}
