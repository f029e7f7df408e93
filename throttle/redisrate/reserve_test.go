package redisrate_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pace-cli/pace/throttle/redisrate"
)

// A call that does not fit now is reserved in one round trip, and leaves
// at received + (at - Redis's now): never before the reserved instant,
// however late the reply came back, and as late after it as the reply's
// way back. The admission's instant is the reserved one.
func TestReserveLeavesAtReservedInstant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.setHandle(func(c fakeCall) (any, error) {
			if c.op() != "admit" {
				return f.scriptReply(c), nil
			}
			time.Sleep(10 * time.Millisecond) // on its way to Redis
			r := reserved(300*time.Millisecond, 1, 1)
			time.Sleep(30 * time.Millisecond) // the reply's way back, slower
			return r, nil
		})
		l := openFake(t, f, "1/s", redisrate.Options{})
		start := time.Now()
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := time.Since(start), 340*time.Millisecond; got != want {
			t.Errorf("Admit returned after %v, want %v (reply at 40ms + 300ms ahead)", got, want)
		}
		if want := start.Add(310 * time.Millisecond); !a.At.Equal(want) {
			t.Errorf("At = %v, want the reserved instant %v", a.At.Sub(start), want.Sub(start))
		}
		if a.Latency != 20*time.Millisecond || a.Waited != 340*time.Millisecond {
			t.Errorf("Latency %v, Waited %v; want half the round trip (20ms), 340ms", a.Latency, a.Waited)
		}
		s := l.Stats()
		if s.Store.RoundTrips != 1 || s.Admitted != 1 || s.Waits != 1 || s.Rules[0].Waits != 1 {
			t.Errorf("Stats() = %+v, want 1 round trip, 1 admission that waited on rule 0", s)
		}
	})
}

// A caller that gives up while its reservation is still to come gives it
// back: a cancel script call for that member at that instant; nothing is
// admitted. The callers behind it reserved meanwhile, in order.
func TestReserveCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		var ahead time.Duration
		f.setHandle(func(c fakeCall) (any, error) {
			if c.op() != "admit" {
				return f.scriptReply(c), nil
			}
			ahead += 100 * time.Millisecond
			return reserved(ahead, 1, 1), nil
		})
		l := openFake(t, f, "1/s", redisrate.Options{GlobalJobs: 5})
		ctx, cancel := context.WithCancel(context.Background())
		first := goAdmit(ctx, l, 1)
		synctest.Wait()
		second := goAdmit(context.Background(), l, 1)
		if _, ok := returned(second); ok {
			t.Fatal("the second caller returned before its reservation")
		}
		if n := len(f.Calls()); n < 4 { // two takes, two admits
			t.Fatalf("%d calls, want both callers to have reserved while the first sleeps: %v", n, f.ops())
		}
		cancel()
		r, ok := returned(first)
		if !ok || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("first Admit = %v, %v; want context.Canceled at once", r.err, ok)
		}
		var admits, cancels []fakeCall
		for _, c := range f.Calls() {
			switch c.op() {
			case "admit":
				admits = append(admits, c)
			case "cancel":
				cancels = append(cancels, c)
			}
		}
		if len(cancels) != 1 || cancels[0].args[0] != admits[0].member() {
			t.Fatalf("cancel calls %+v, want one for %v", cancels, admits[0].member())
		}
		if f.held() != 1 {
			t.Errorf("%d slots held, want the first caller's given back", f.held())
		}
		time.Sleep(time.Second)
		r, ok = returned(second)
		if !ok || r.err != nil {
			t.Fatalf("second Admit = %v, %v", r.err, ok)
		}
		r.a.Release()
		if s := l.Stats(); s.Admitted != 1 || s.InFlight != 0 || f.held() != 0 {
			t.Errorf("Stats() = %+v, %d slots held; want 1 admitted, none in flight or held", s, f.held())
		}
	})
}

// A server's pause that comes while a call sleeps to its reservation
// keeps the call back: the reservation is given back, and the call asks
// again once the pause is over.
func TestReservePausedMeanwhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		asked := 0
		f.setHandle(func(c fakeCall) (any, error) {
			if c.op() != "admit" {
				return f.scriptReply(c), nil
			}
			asked++
			if asked == 1 {
				return reserved(200*time.Millisecond, 1, 1), nil
			}
			return admitted(1), nil
		})
		l := openFake(t, f, "1/s", redisrate.Options{})
		start := time.Now()
		done := goAdmit(context.Background(), l, 1)
		synctest.Wait()
		l.PauseUntil(start.Add(time.Second), "429")
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := time.Since(start); got != time.Second || asked != 2 {
			t.Errorf("admitted after %v and %d script calls, want at the pause's end (1s) after 2", got, asked)
		}
		if ops := f.ops(); len(ops) != 3 || ops[1] != "cancel" {
			t.Errorf("calls %v, want admit, cancel, admit", ops)
		}
	})
}
