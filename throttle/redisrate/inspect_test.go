package redisrate_test

import (
	"context"
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/redisrate"
)

// Inspect and Reset against a real redis-server: what pace quota show and
// pace quota reset read and do.

func TestInspectLive(t *testing.T) {
	t.Parallel()
	c := liveClient(t, redistest.Start(t).Addr())
	ctx := context.Background()

	// Nothing kept: no error, an expired quota with no rules.
	q, err := redisrate.Inspect(ctx, c, "api")
	if err != nil || !q.Expired || q.Spec != "" || len(q.Rules) != 0 || len(q.Leases) != 0 {
		t.Fatalf("Inspect(nothing) = %+v, %v; want an expired empty quota", q, err)
	}

	// Three calls under 3/h (full), 10/m and cost:100/h (cost 7 each),
	// and one slot held of 2.
	l := liveOpen(t, c, "api", "10/m,3/h,cost:100/h", redisrate.Options{GlobalJobs: 2})
	var held throttle.Admission
	for i := range 3 {
		a, err := l.Admit(ctx, 7)
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			a.Release()
		} else {
			held = a
		}
	}
	q, err = redisrate.Inspect(ctx, c, "api")
	if err != nil {
		t.Fatal(err)
	}
	if q.Spec != l.Spec() || q.Expired || q.GlobalJobs != 2 || q.Key != "api" {
		t.Errorf("Inspect: spec %q, expired %v, global jobs %d, key %q; want %q, false, 2, api", q.Spec, q.Expired, q.GlobalJobs, q.Key, l.Spec())
	}
	want := []struct {
		rule string
		used int
	}{{"10/m", 3}, {"3/h", 3}, {"cost:100/h", 21}}
	if len(q.Rules) != len(want) {
		t.Fatalf("Inspect: rules %+v, want %v", q.Rules, want)
	}
	for i, w := range want {
		if r := q.Rules[i]; r.Rule.String() != w.rule || r.Used != w.used || r.Counter {
			t.Errorf("rule %d = %s used %d (counter %v), want %s used %d", i, r.Rule, r.Used, r.Counter, w.rule, w.used)
		}
	}
	// 3/h is full: the next call waits about an hour.
	if d := q.Next.Sub(q.Now); d < 59*time.Minute || d > time.Hour {
		t.Errorf("Next - Now = %v, want just under 1h", d)
	}
	if time.Since(q.Now).Abs() > time.Minute {
		t.Errorf("Now = %v, want Redis's time, about now", q.Now)
	}
	if len(q.Leases) != 1 || q.Leases[0].Holder == "" || q.Leases[0].Expires.Before(q.Now) {
		t.Errorf("Leases = %+v, want one live lease", q.Leases)
	}

	// Reset refuses while the slot is held, then forgets everything.
	if err := redisrate.Reset(ctx, c, "api"); !errors.Is(err, redisrate.ErrInUse) {
		t.Errorf("Reset(a slot held) = %v, want ErrInUse", err)
	}
	held.Release()
	if err := redisrate.Reset(ctx, c, "api"); err != nil {
		t.Fatalf("Reset = %v", err)
	}
	if n, err := c.Exists(ctx, l.Keys()...).Result(); err != nil || n != 0 {
		t.Errorf("after Reset %d of the quota's keys exist (%v), want none", n, err)
	}
	if err := redisrate.Reset(ctx, c, "api"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Reset(nothing) = %v, want fs.ErrNotExist", err)
	}
	// Another rule set may take the name at once.
	other := liveOpen(t, c, "api", "1/s", redisrate.Options{})
	if _, err := other.Admit(ctx, 1); err != nil {
		t.Errorf("Admit with other rules after Reset = %v", err)
	}
}

func TestInspectLiveCounterAndNext(t *testing.T) {
	t.Parallel()
	c := liveClient(t, redistest.Start(t).Addr())
	ctx := context.Background()
	// A log, and a rule kept by a counter (CounterAbove 50: 100/h is a
	// counter), both with room: Next is Now.
	l := liveOpen(t, c, "k", "5/m,100/h", redisrate.Options{CounterAbove: 50})
	for range 2 {
		if _, err := l.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	q, err := redisrate.Inspect(ctx, c, "k")
	if err != nil {
		t.Fatal(err)
	}
	if q.Spec != l.Spec() || len(q.Rules) != 2 || q.Rules[0].Counter || q.Rules[0].Used != 2 || !q.Rules[1].Counter || q.Rules[1].Used != 2 {
		t.Errorf("Inspect = %+v, want 5/m and 100/h (counter), 2 used each", q)
	}
	if !q.Next.Equal(q.Now) {
		t.Errorf("Next = %v, want Now %v (room for a call)", q.Next, q.Now)
	}
	if q.Rules[0].Usage != 0.4 {
		t.Errorf("Usage of 5/m = %v, want 0.4", q.Rules[0].Usage)
	}
}

func TestInspectLiveDown(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := liveClient(t, srv.Addr())
	srv.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := redisrate.Inspect(ctx, c, "k"); !errors.Is(err, throttle.ErrBackend) {
		t.Errorf("Inspect(Redis down) = %v, want ErrBackend", err)
	}
	if err := redisrate.Reset(ctx, c, "k"); !errors.Is(err, throttle.ErrBackend) {
		t.Errorf("Reset(Redis down) = %v, want ErrBackend", err)
	}
}

// A name Open takes as it is (spaces around it, or only spaces) is the
// name Inspect and Reset look at: they trimmed it, so that "pace quota
// reset --key ' '" forgot the quota "default", another fleet's, and
// " api" could be neither shown nor reset.
func TestInspectLiveNameAsGiven(t *testing.T) {
	t.Parallel()
	c := liveClient(t, redistest.Start(t).Addr())
	ctx := context.Background()
	def := liveOpen(t, c, redisrate.DefaultKey, "5/m", redisrate.Options{})
	spaced := liveOpen(t, c, " api ", "7/m", redisrate.Options{})
	for _, l := range []*redisrate.Limiter{def, spaced} {
		if _, err := l.Admit(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	q, err := redisrate.Inspect(ctx, c, " api ")
	if err != nil || q.Spec != spaced.Spec() || q.Key != " api " {
		t.Fatalf(`Inspect(" api ") = %+v, %v; want the quota " api " kept with %q`, q, err, spaced.Spec())
	}
	if err := redisrate.Reset(ctx, c, "  "); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf(`Reset("  ") = %v, want fs.ErrNotExist (no quota of that name)`, err)
	}
	if q, err := redisrate.Inspect(ctx, c, redisrate.DefaultKey); err != nil || q.Expired {
		t.Errorf(`Inspect(%q) after Reset("  ") = %+v, %v; want the quota kept`, redisrate.DefaultKey, q, err)
	}
	if err := redisrate.Reset(ctx, c, " api "); err != nil {
		t.Errorf(`Reset(" api ") = %v`, err)
	}
	if n, err := c.Exists(ctx, spaced.Keys()...).Result(); err != nil || n != 0 {
		t.Errorf(`after Reset(" api ") %d of its keys exist (%v), want none`, n, err)
	}
}

// A name Open no longer takes (longer than MaxKeyLen, or with control
// characters) may be an older pace's quota, still kept in Redis: Inspect
// and Reset still reach it. They failed with "stored rules \"\": key ...:
// want a name of at most 256 bytes", so that it could not be forgotten.
func TestInspectLiveOlderNames(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := liveClient(t, srv.Addr())
	ctx := context.Background()
	for _, name := range []string{strings.Repeat("k", redisrate.MaxKeyLen+44), "tab\there"} {
		// As an older pace kept it: the rule set and one call in 5/m.
		do(t, srv, "SET", "pace:{"+name+"}:rules", "5/m")
		do(t, srv, "ZADD", "pace:{"+name+"}:r0:5/m", strconv.FormatInt(time.Now().UnixMicro(), 10), "old.1")
		q, err := redisrate.Inspect(ctx, c, name)
		if err != nil || q.Spec != "5/m" || len(q.Rules) != 1 || q.Rules[0].Used != 1 {
			t.Errorf("Inspect(%.20q...) = %+v, %v; want the quota kept with 5/m, 1 used", name, q, err)
		}
		if err := redisrate.Reset(ctx, c, name); err != nil {
			t.Errorf("Reset(%.20q...) = %v", name, err)
		}
		if n := do(t, srv, "EXISTS", "pace:{"+name+"}:rules", "pace:{"+name+"}:r0:5/m"); n != "0" {
			t.Errorf("after Reset(%.20q...) %s of its keys exist, want none", name, n)
		}
	}
}
