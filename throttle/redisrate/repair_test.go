package redisrate_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle/redisrate"
)

// What a process sends when the admission script finds its latest call
// gone (answers lost): each of its calls that a rule still counts, and no
// older one; then the same calls are asked for again, without the check
// (the repair did what it could: no loop on "lost"). The check comes back
// with the next admission.
func TestRepairSendsRememberedCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		var lost atomic.Bool
		f.setHandle(func(c fakeCall) (any, error) {
			switch c.op() {
			case "admit":
				if lost.CompareAndSwap(true, false) {
					return []any{int64(2), time.Now().UnixMicro(), int64(1)}, nil
				}
			case "repair":
				return []any{int64(1), time.Now().UnixMicro(), int64(2), int64(0)}, nil
			}
			return f.scriptReply(c), nil
		})
		var heard losses
		// Redis order: 5/s, cost:20/s.
		l := openFake(t, f, "cost:20/s,5/s", redisrate.Options{OnLoss: heard.report})
		ctx := context.Background()
		var ats []int64
		for i, c := range []int{3, 4, 6} {
			a, err := l.Admit(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			ats = append(ats, a.At.UnixMicro())
			if i == 0 {
				time.Sleep(1500 * time.Millisecond) // the first call leaves every window
			}
		}
		admits := f.Calls()
		lastAdmit := admits[len(admits)-1]
		if got := lastAdmit.args[7:9]; fmt.Sprint(got) != fmt.Sprint([]any{ats[1], admits[1].args[1]}) {
			t.Errorf("third admission checks %v, want the second's instant and id %v", got, []any{ats[1], admits[1].args[1]})
		}

		time.Sleep(100 * time.Millisecond)
		lost.Store(true)
		if _, err := l.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
		calls := f.Calls()[len(admits):]
		if ops := fmt.Sprint(f.ops()[len(admits):]); ops != "[admit repair admit]" {
			t.Fatalf("after the loss: calls %s, want [admit repair admit]", ops)
		}
		// The repair: spec, clock, ttl, margin, its time in force, the
		// process id, 2 calls, 0 buckets, the latest admission, then each
		// rule's window and mode, then the calls.
		rep := calls[1]
		want := fmt.Sprint([]any{2, 0, ats[2], int64(1000000), "0", int64(1000000), "2",
			admits[1].args[1], ats[1], 4, admits[2].args[1], ats[2], 6})
		if got := fmt.Sprint(rep.args[6:]); got != want {
			t.Errorf("repair args %s, want %s (the calls still in a window, not the first)", got, want)
		}
		if got := calls[2].args[7]; got != int64(0) {
			t.Errorf("the admission after the repair checks %v, want 0 (nothing)", got)
		}
		if got := heard.get(); len(got) != 1 || got[0].Restored != 2 || got[0].Last.UnixMicro() != ats[2] {
			t.Errorf("OnLoss heard %+v, want one loss, 2 restored, last at %d", got, ats[2])
		}
		if _, err := l.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if got := f.Calls()[len(f.Calls())-1].args[7]; got == int64(0) {
			t.Error("the admission after the next one checks nothing, want the latest admission checked again")
		}
	})
}

// A repair that Redis refuses for good (here, another process took the
// quota with other rules) fails the admission with that error, and the
// next admission checks again.
func TestRepairMismatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.setHandle(func(c fakeCall) (any, error) {
			switch c.op() {
			case "admit":
				if c.args[7] != int64(0) {
					return []any{int64(2), time.Now().UnixMicro(), int64(1)}, nil
				}
			case "repair":
				return []any{int64(-1), "1/s"}, nil
			}
			return f.scriptReply(c), nil
		})
		l := openFake(t, f, "5/s", redisrate.Options{})
		ctx := context.Background()
		if _, err := l.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := l.Admit(ctx, 1); err == nil {
				t.Fatal("Admit after a loss whose repair found other rules = nil, want the mismatch")
			}
		}
		if ops := fmt.Sprint(f.ops()); ops != "[admit admit repair admit repair]" {
			t.Errorf("calls %s, want [admit admit repair admit repair]", ops)
		}
	})
}
