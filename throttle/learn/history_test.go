package learn

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/backend"
)

// scripted is a backend that hands out the admissions it was given, one
// per Admit, in order.
type scripted struct {
	*throttle.Limiter
	next []throttle.Admission
}

func (b *scripted) Admit(context.Context, int) (throttle.Admission, error) {
	a := b.next[0]
	b.next = b.next[1:]
	return a, nil
}

type testOwner struct{ name string }

func (*testOwner) Release(uint64)                                             {}
func (*testOwner) Correct(context.Context, uint64, time.Time, int, int) error { return nil }

// funcOwner is an owner that cannot be compared.
type funcOwner func(uint64)

func (f funcOwner) Release(h uint64)                                         { f(h) }
func (funcOwner) Correct(context.Context, uint64, time.Time, int, int) error { return nil }

// same is the oracle: whether a and b are copies of one admission, equal
// but for a cost corrected since and the latency Admit added after it
// recorded its copy (the learner compared them so when it kept them whole).
func same(a, b throttle.Admission) bool {
	b.Cost, b.Latency = a.Cost, a.Latency
	return a == b
}

// lookalikes returns admissions that differ from one another in one field
// each, where an encoding of the history could confuse them: one instant
// with and without a monotonic reading, one wall-clock reading with two
// monotonic ones (the clock stepped), one instant in two locations,
// instants far apart (whose nanoseconds since 1970 overflow alike),
// another wait, and two calls at the same instant told apart by their id
// and handle only.
func lookalikes(t *testing.T) []throttle.Admission {
	now := time.Now()
	base := backend.NewAdmission(&testOwner{"a"}, 1, 1, now, 1, 0, 0)
	var adms []throttle.Admission
	at := func(at time.Time) {
		a := base
		a.At = at
		adms = append(adms, a)
	}
	at(now)
	at(now.Round(0))
	// The same wall-clock reading as now, another monotonic one: the
	// two clocks moved apart by some nanoseconds between two readings.
	stepped := false
	for range 1_000_000 {
		a, b := time.Now(), time.Now()
		if b.Sub(a) != b.Round(0).Sub(a.Round(0)) {
			c := b.Add(a.Round(0).Sub(b.Round(0)))
			at(a)
			at(c)
			stepped = true
			break
		}
	}
	if !stepped {
		t.Log("the wall and monotonic clocks never moved apart: no stepped look-alike")
	}
	at(now.Round(0).In(time.UTC))
	at(now.Round(0).In(time.FixedZone("UTC", 0)))
	at(now.Round(0).In(time.FixedZone("CET", 3600)))
	at(time.Unix(0, 1))
	at(time.Unix(1<<55, 1)) // the same UnixNano as time.Unix(0, 1)
	at(time.Unix(math.MaxInt64, 999_999_999))
	at(time.Unix(math.MinInt64, 0))
	at(time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC))
	waited := base
	waited.Waited = time.Nanosecond
	adms = append(adms, waited)
	// Two calls at one instant: the same At, owner and (zero) local
	// instant, another id and handle.
	lim, err := throttle.New(throttle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_000_000, 0)
	for range 2 {
		a, ok := lim.AllowN(t0, 1)
		if !ok {
			t.Fatal("AllowN(t0, 1) = false, want true")
		}
		adms = append(adms, a)
	}
	adms = append(adms, backend.NewAdmission(&testOwner{"b"}, 1, 1, now, 1, 0, 0))
	return adms
}

// copyOf returns a copy of a whose cost was corrected and latency grown,
// as a caller of Observe may hold it.
func copyOf(a throttle.Admission) throttle.Admission {
	a.Cost += 2
	a.Latency += time.Millisecond
	return a
}

// The history keeps admissions without pointers, by their keys: two keys
// are equal exactly when comparing the admissions whole (same) says they
// are copies of one, however alike they are.
func TestHistoryKeys(t *testing.T) {
	adms := lookalikes(t)
	l := New(mem(t), nil, Options{})
	l.mu.Lock()
	for i, a := range adms {
		for j, b := range adms {
			for _, b := range []throttle.Admission{b, copyOf(b)} {
				if got, want := l.keyLocked(a, true) == l.keyLocked(b, true), same(a, b); got != want {
					t.Errorf("keys of %d (At %v) and %d (At %v) equal = %v, want %v", i, a.At, j, b.At, got, want)
				}
			}
		}
	}
	// Owners are told apart as pointers, and one that cannot be compared
	// is of no kind.
	o1, o2 := &testOwner{"a"}, &testOwner{"a"}
	if k1, k2 := l.kindLocked(kind{owner: o1}, true), l.kindLocked(kind{owner: o2}, true); k1 == k2 || k1 != l.kindLocked(kind{owner: o1}, false) {
		t.Errorf("kinds of two owners %d and %d, of the first again %d: want two, the first's again", k1, k2, l.kindLocked(kind{owner: o1}, false))
	}
	if k := l.kindLocked(kind{owner: funcOwner(nil)}, true); k != noKind {
		t.Errorf("kind of an owner that cannot be compared = %d, want noKind", k)
	}
	l.mu.Unlock()
}

// A refusal is charged to its own call however alike others are:
// refusing a copy of each look-alike in turn marks that call refused and
// no other, and an admission the learner never recorded marks none.
func TestLearnerRefusalMatchesItsCall(t *testing.T) {
	adms := lookalikes(t)
	for i := range adms {
		for j := range i {
			if same(adms[i], adms[j]) {
				t.Fatalf("look-alikes %d and %d are one admission (At %v)", j, i, adms[i].At)
			}
		}
	}
	l := New(&scripted{Limiter: mem(t), next: adms}, nil, Options{})
	var got []throttle.Admission
	for range adms {
		a, err := l.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a)
	}
	l.Observe(backend.NewAdmission(&testOwner{"a"}, 1, 1, time.Now(), 1, 0, 0), Outcome{Status: 429, RetryAfter: time.Second})
	for j, c := range l.recent {
		if c.refused {
			t.Errorf("call %d (At %v) refused by an admission never recorded", j, adms[j].At)
		}
	}
	for i, a := range got {
		l.Observe(copyOf(a), Outcome{Status: 429, RetryAfter: time.Second})
		l.mu.Lock()
		for j, c := range l.recent {
			if want := j <= i; c.refused != want {
				t.Errorf("after refusing %d (At %v): call %d (At %v) refused = %v, want %v", i, a.At, j, adms[j].At, c.refused, want)
			}
		}
		l.mu.Unlock()
	}
}

// An admission whose owner cannot be compared is recorded, and its
// refusal matches nothing, rather than panic as comparing it whole did.
func TestHistoryOwnerNotComparable(t *testing.T) {
	a := backend.NewAdmission(funcOwner(func(uint64) {}), 1, 1, time.Now(), 1, 0, 0)
	l := New(&scripted{Limiter: mem(t), next: []throttle.Admission{a}}, nil, Options{})
	a, err := l.Admit(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	l.Observe(a, Outcome{Status: 429, RetryAfter: time.Second})
	if len(l.recent) != 1 || l.recent[0].refused {
		t.Errorf("recent = %+v, want the one call, not refused", l.recent)
	}
}

// A backend whose every admission has an owner of its own does not grow
// the learner's kinds past what its history holds.
func TestHistoryForgetsKinds(t *testing.T) {
	l := New(mem(t), nil, Options{})
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for k := range 3 * recentCap {
		a := backend.NewAdmission(&testOwner{}, 1, uint64(k), now, 1, 0, 0)
		l.insertLocked(call{at: int64(k), adm: l.keyLocked(a, true)})
		if len(l.kinds) > len(l.recent)+maxKinds {
			t.Fatalf("after %d calls, %d kinds for %d calls recorded", k+1, len(l.kinds), len(l.recent))
		}
	}
	for i, c := range l.recent {
		if c.adm.kind >= uint32(len(l.kinds)) || l.kindIndex[l.kinds[c.adm.kind]] != c.adm.kind {
			t.Fatalf("call %d has kind %d, not among the %d kept", i, c.adm.kind, len(l.kinds))
		}
	}
}
