package learn

import (
	"reflect"
	"time"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/internal/link"
)

// The history of admissions (Backend.recent) holds up to recentCap calls
// and no pointers, so that the collector never scans it: with a
// time.Time and a throttle.Admission in each (a *time.Location and an
// owner inside), every collection of a busy pace proxy scanned some 12 MB
// of it. Instants are nanoseconds on the monotonic clock; an admission is
// kept as the fields that tell it apart from another (admKey), and what
// it holds behind pointers as the index of a kind the learner keeps once.

// epoch is the instant the history counts from. Read when the package is
// initialised, outside any synctest bubble, it has a monotonic reading.
var epoch = time.Now()

// instant returns t as the history keeps it: nanoseconds since epoch, on
// the monotonic clock when t has a reading (time.Now's), so that one
// instant is before another in the history as t is Before it.
func instant(t time.Time) int64 { return int64(t.Sub(epoch)) }

var identityOf = link.IdentityOf.(func(throttle.Admission) (link.Owner, uint64, uint64, time.Time))

// call is one admission the learner recorded.
type call struct {
	at      int64  // when the learner recorded it (instant), by this process's clock
	adm     admKey // the admission, for Observe to find
	refused bool
}

// admKey is an admission as the learner matches it: every field but its
// cost (corrected since, perhaps) and its latency (which Admit adds after
// it recorded the call). Copies of one admission have the same key, and
// two admissions that differ in any other field have different keys: the
// same instant with another id, handle or owner, one wall-clock reading
// with another monotonic one (the wall clock stepped between them), or
// with none, or in another location.
type admKey struct {
	at, local  stamp // the admission's At, and its record's instant on this machine
	waited     time.Duration
	handle, id uint64
	kind       uint32 // in Backend.kinds; noKind matches nothing
}

// stamp is a time.Time as == compares it, but for its location (a
// pointer, kept in a kind): the wall-clock instant, and the monotonic
// reading if it has one.
type stamp struct {
	sec     int64 // t.Unix(): it wraps around only for the most distant instants, one to one
	mono    int64 // the monotonic reading, less epoch's; 0 without one
	nsec    int32
	hasMono bool
}

// stampOf returns t's stamp. A monotonic reading is counted from epoch's,
// exactly: the readings time keeps are within 2^33 seconds of each other.
func stampOf(t time.Time) stamp {
	s := stamp{sec: t.Unix(), nsec: int32(t.Nanosecond())}
	if t != t.Round(0) { // Round(0) strips the monotonic reading only
		s.hasMono, s.mono = true, int64(t.Sub(epoch))
	}
	return s
}

// kind is what an admission holds behind pointers: its owner and the
// locations of its two instants. The admissions of one backend are of
// one kind, or a few.
type kind struct {
	owner     link.Owner
	at, local *time.Location
}

// noKind is the kind of an admission whose owner cannot be compared (a
// func): none can be told from another, so Observe matches none of them.
const noKind = ^uint32(0)

// maxKinds is how many kinds a learner keeps before it forgets those no
// call in its history has: a backend whose every admission had an owner
// of its own must not grow them without end.
const maxKinds = 64

// keyLocked returns a's key. With add, a kind not met before is kept;
// without, the key of such an admission has noKind, as no recorded call
// has it. Requires l.mu held.
func (l *Backend) keyLocked(a throttle.Admission, add bool) admKey {
	owner, handle, id, local := identityOf(a)
	return admKey{at: stampOf(a.At), local: stampOf(local), waited: a.Waited, handle: handle, id: id,
		kind: l.kindLocked(kind{owner, a.At.Location(), local.Location()}, add)}
}

// kindLocked returns k's index in l.kinds, keeping it there if add and it
// is new; noKind if it is not there, or its owner cannot be compared.
// Requires l.mu held.
func (l *Backend) kindLocked(k kind, add bool) uint32 {
	// l.kinds holds only owners that can be compared, so comparing one
	// with k's cannot panic, whatever k's.
	if int(l.lastKind) < len(l.kinds) && l.kinds[l.lastKind] == k {
		return l.lastKind
	}
	if k.owner != nil && !reflect.ValueOf(k.owner).Comparable() {
		return noKind
	}
	i, ok := l.kindIndex[k]
	if !ok {
		if !add {
			return noKind
		}
		if l.kindIndex == nil {
			l.kindIndex = map[kind]uint32{}
		}
		i = uint32(len(l.kinds))
		l.kinds = append(l.kinds, k)
		l.kindIndex[k] = i
	}
	l.lastKind = i
	return i
}

// indexLocked returns the index in l.recent of the call admitted as a (a
// copy will do, its cost corrected or not), or -1. Requires l.mu held.
func (l *Backend) indexLocked(a throttle.Admission) int {
	k := l.keyLocked(a, false)
	if k.kind == noKind {
		return -1
	}
	for i := range l.recent {
		if l.recent[i].adm == k {
			return i
		}
	}
	return -1
}

// forgetKindsLocked keeps only the kinds of the calls in the history,
// once there are more than maxKinds. Requires l.mu held.
func (l *Backend) forgetKindsLocked() {
	if len(l.kinds) <= maxKinds {
		return
	}
	renumbered := make([]uint32, len(l.kinds))
	for i := range renumbered {
		renumbered[i] = noKind
	}
	var kept []kind
	for i := range l.recent {
		k := &l.recent[i].adm.kind
		if *k == noKind {
			continue
		}
		if renumbered[*k] == noKind {
			renumbered[*k] = uint32(len(kept))
			kept = append(kept, l.kinds[*k])
		}
		*k = renumbered[*k]
	}
	l.kinds, l.kindIndex, l.lastKind = kept, make(map[kind]uint32, len(kept)), 0
	for i, k := range kept {
		l.kindIndex[k] = uint32(i)
	}
}
