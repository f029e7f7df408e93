package redisrate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

func TestGlobalJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle = func(c fakeCall) (any, error) {
			if len(f.Calls()) == 1 {
				return full(2, 5*time.Second), nil
			}
			return f.scriptReply(c), nil
		}
		l := openFake(t, f, "10/s", redisrate.Options{GlobalJobs: 2, Lease: 3 * time.Second})
		done := goAdmit(context.Background(), l, 1)
		// Full: ask again after the poll interval, not the 5s until the
		// earliest lease expires (slots are mostly freed by release).
		time.Sleep(redisrate.SlotPoll - time.Nanosecond)
		if _, ok := returned(done); ok || len(f.Calls()) != 1 {
			t.Fatalf("Admit returned %v after %d calls before the slot poll, want one take and a wait", ok, len(f.Calls()))
		}
		time.Sleep(time.Nanosecond)
		r, ok := returned(done)
		if !ok || r.err != nil {
			t.Fatalf("Admit after the slot poll = %v (returned %v), want an admission", r.err, ok)
		}
		if r.a.Waited != redisrate.SlotPoll {
			t.Errorf("Admission.Waited = %v, want %v", r.a.Waited, redisrate.SlotPoll)
		}
		if got := f.ops(); !slices.Equal(got, []string{"take", "take", "admit"}) {
			t.Fatalf("ops = %q, want take, take, admit", got)
		}
		calls := f.Calls()
		id := calls[0].member()
		for _, c := range calls[:2] {
			if c.member() != id || fmt.Sprint(c.args[2:5]) != fmt.Sprint([]any{2, int64(3000000), c.at.UnixMicro()}) {
				t.Errorf("take args %v, want lease %v, cap 2, lease 3s, the caller's clock", c.args, id)
			}
			if c.keys[0] != "pace:{api}:slots" || len(c.keys) != 1 {
				t.Errorf("take keys %q, want the slots key", c.keys)
			}
		}
		if s := l.Stats(); s.InFlight != 1 || s.MaxInFlight != 2 || s.SlotWaits != 1 || s.SlotWaitTime != redisrate.SlotPoll {
			t.Errorf("Stats() = %+v, want 1 in flight of 2 after one slot wait of %v", s, redisrate.SlotPoll)
		}

		// The lease is renewed every Lease/3 while held.
		time.Sleep(2 * time.Second)
		synctest.Wait()
		r.a.Release()
		r.a.Release() // no effect
		if got := f.ops(); !slices.Equal(got, []string{"take", "take", "admit", "renew", "renew", "release"}) {
			t.Fatalf("ops = %q, want two renewals, then one release", got)
		}
		for _, c := range f.Calls()[3:] {
			if c.member() != id {
				t.Errorf("%s of lease %v, want %v", c.op(), c.member(), id)
			}
		}
		time.Sleep(time.Hour)
		if got := len(f.Calls()); got != 6 {
			t.Errorf("%d calls an hour after release, want no more renewals", got)
		}
		if s := l.Stats(); s.InFlight != 0 || s.PeakInFlight != 1 || f.held() != 0 {
			t.Errorf("Stats() = %+v with %d slots held in Redis, want 0 in flight, peak 1", s, f.held())
		}

		// A lease due to expire before the poll is asked for when it does.
		f.setHandle(func(c fakeCall) (any, error) {
			if c.op() == "take" && f.held() == 0 && len(f.Calls()) == 7 {
				return full(2, 30*time.Millisecond), nil
			}
			return f.scriptReply(c), nil
		})
		start := time.Now()
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
		if d := time.Since(start); d != 30*time.Millisecond {
			t.Errorf("took a slot after %v, want 30ms (the earliest expiry)", d)
		}
	})
}

// A slot taken at the first try is no slot wait, even when the round trip
// took time: only a take that found every slot held counts.
func TestSlotTakenAtFirstTryIsNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const rtt = 5 * time.Millisecond
		f := newFake()
		f.handle = func(c fakeCall) (any, error) {
			time.Sleep(rtt)
			return f.scriptReply(c), nil
		}
		l := openFake(t, f, "10/s", redisrate.Options{GlobalJobs: 2})
		var held []throttle.Admission
		for range 2 {
			a, err := l.Admit(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if a.Waited != 2*rtt {
				t.Errorf("Admission.Waited = %v, want two round trips (%v)", a.Waited, 2*rtt)
			}
			held = append(held, a)
		}
		if s := l.Stats(); s.SlotWaits != 0 || s.SlotWaitTime != 0 || s.Waits != 0 {
			t.Fatalf("Stats() = %+v after two slots taken at the first try, want no slot wait", s)
		}

		// Both slots held: the third caller waits until one is released.
		start := time.Now()
		done := goAdmit(context.Background(), l, 1)
		time.Sleep(50 * time.Millisecond)
		held[0].Release()
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		// take (full) at 0..5ms, poll until 105ms, take again until 110ms.
		wantWait := rtt + redisrate.SlotPoll + rtt
		if s := l.Stats(); s.SlotWaits != 1 || s.SlotWaitTime != wantWait {
			t.Errorf("Stats() = %+v, want one slot wait of %v", s, wantWait)
		}
		if d := time.Since(start); r.a.Waited != d || d != wantWait+rtt {
			t.Errorf("Admission.Waited = %v after %v, want %v", r.a.Waited, d, wantWait+rtt)
		}
	})
}

func TestLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		renewAnswers := func(reply []any) {
			f.setHandle(func(c fakeCall) (any, error) {
				switch {
				case c.op() != "renew":
					return f.scriptReply(c), nil
				case reply == nil:
					return nil, errConnRefused
				}
				return reply, nil
			})
		}
		l := openFake(t, f, "10/s", redisrate.Options{GlobalJobs: 1, Lease: 3 * time.Second})
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Release()
		for _, tt := range []struct {
			reply    []any
			failures int64
			lost     int64
		}{
			{nil, 1, 0},                       // no answer: try again at the next tick
			{[]any{int64(1), int64(0)}, 1, 0}, // renewed
			{[]any{int64(1), int64(0)}, 1, 0}, // renewed
			{[]any{int64(0), int64(0)}, 1, 1}, // expired, slots full: lost
			{[]any{int64(0), int64(0)}, 1, 1}, // still lost: one slot, counted once
			{[]any{int64(2), int64(0)}, 1, 1}, // taken again: still that one slot
		} {
			renewAnswers(tt.reply)
			time.Sleep(time.Second)
			synctest.Wait()
			if s := l.Stats().Store; s.Failures != tt.failures || s.LeasesLost != tt.lost {
				t.Errorf("after renewal answered %v: Stats().Store = %+v, want %d failures, %d leases lost",
					tt.reply, s, tt.failures, tt.lost)
			}
		}
	})
}

// A lease that ran out and was taken again at the next renewal is lost
// too: while it had run out another process could take the slot and give
// it back before the renewal, and the fleet then ran more jobs than the cap
// without any process knowing it.
func TestLeaseExpiredTakenAgainIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.setHandle(func(c fakeCall) (any, error) {
			if c.op() == "renew" {
				return []any{int64(2), int64(0)}, nil // expired, taken again
			}
			return f.scriptReply(c), nil
		})
		l := openFake(t, f, "10/s", redisrate.Options{GlobalJobs: 1, Lease: 3 * time.Second})
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Release()
		time.Sleep(3500 * time.Millisecond) // three renewals, each answered 2
		synctest.Wait()
		if s := l.Stats().Store; s.LeasesLost != 1 {
			t.Errorf("after renewals found the lease expired and took it again: Stats().Store = %+v, want 1 lease lost", s)
		}
	})
}

func TestCancelGivesTheSlotBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.handle = func(c fakeCall) (any, error) {
			if c.op() == "admit" {
				return refused(time.Hour, 1, 10), nil
			}
			return f.scriptReply(c), nil
		}
		l := openFake(t, f, "10/s", redisrate.Options{GlobalJobs: 1})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := l.Admit(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Admit = %v, want DeadlineExceeded", err)
		}
		// A caller whose context has ended does not wait for the release:
		// it goes on in the background.
		synctest.Wait()
		if got := f.ops(); !slices.Equal(got[len(got)-1:], []string{"release"}) || got[0] != "take" {
			t.Fatalf("ops = %q, want take, admit, renewals, release", got)
		}
		if s := l.Stats(); s.InFlight != 0 || f.held() != 0 {
			t.Errorf("InFlight = %d, %d slots held in Redis; want 0, 0", s.InFlight, f.held())
		}

		// A caller that gives up while it waits for a slot holds none.
		f.setHandle(nil)
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Release()
		ctx, cancel = context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n := len(f.Calls())
		if _, err := l.Admit(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Admit while the slot is held = %v, want DeadlineExceeded", err)
		}
		for _, op := range f.ops()[n:] {
			if op != "take" && op != "renew" {
				t.Errorf("op %s while waiting for a slot, want takes (and the holder's renewals)", op)
			}
		}
		if s := l.Stats(); s.InFlight != 1 || s.SlotWaits != 0 || f.held() != 1 {
			t.Errorf("Stats() = %+v, %d slots held in Redis; want the holder's only, no slot wait counted", s, f.held())
		}
	})
}

func TestMalformedTakeReply(t *testing.T) {
	for _, reply := range []any{
		"OK",
		[]any{},
		[]any{int64(1), int64(2)},
		[]any{int64(0), int64(2), int64(1)},
		[]any{int64(0), int64(2), int64(1), "x"},
		[]any{int64(5), int64(2), int64(1)},
	} {
		synctest.Test(t, func(t *testing.T) {
			f := newFake()
			f.handle = func(c fakeCall) (any, error) { return reply, nil }
			l := openFake(t, f, "10/s", redisrate.Options{GlobalJobs: 1})
			if _, err := l.Admit(context.Background(), 1); !errors.Is(err, throttle.ErrBackend) {
				t.Errorf("take answered %#v: Admit = %v, want ErrBackend", reply, err)
			}
			if got := f.ops(); !slices.Equal(got, []string{"take"}) {
				t.Errorf("take answered %#v: ops %q, want one take", reply, got)
			}
		})
	}
}

// A renewal under way when the slot is released must not take the slot
// again after the release: Release waits for the renewer to stop.
func TestReleaseDuringRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		l := openFake(t, f, "10/s", redisrate.Options{GlobalJobs: 1, Lease: 3 * time.Second})
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		proceed := make(chan struct{})
		f.setHandle(func(c fakeCall) (any, error) {
			if c.op() == "renew" {
				<-proceed // the renewal is slow to reach Redis
			}
			return f.scriptReply(c), nil
		})
		time.Sleep(time.Second)
		synctest.Wait() // the first renewal is under way
		if got := f.ops(); got[len(got)-1] != "renew" {
			t.Fatalf("ops = %q, want a renewal under way", got)
		}
		released := make(chan struct{})
		go func() {
			a.Release()
			close(released)
		}()
		synctest.Wait()
		close(proceed)
		<-released
		synctest.Wait() // whatever the renewer still does
		if n := f.held(); n != 0 {
			t.Errorf("%d slots held after Release (ops %q), want 0: the renewal took the slot again", n, f.ops())
		}
		if got := f.ops(); got[len(got)-1] != "release" {
			t.Errorf("ops = %q, want the release last", got)
		}
	})
}
