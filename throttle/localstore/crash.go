package localstore

import (
	"sync"
	"time"

	"go.etcd.io/bbolt"
)

// A crash of the host. By default (no Options.Sync) a transaction ends
// once its writes are in the kernel's cache, so a crash of the host or a
// power cut may lose the admissions that the kernel had not written back
// yet. Two things bound what that can cost the quota:
//
//   - An admission waits for the disk (bbolt's fsyncs) whenever the last
//     one that did is syncEvery old or more, and the store records its
//     instant (meta "synced"). Every admission that Admit returned and a
//     crash lost was therefore made in the syncEvery after the "synced"
//     that the disk kept: a later one would have waited for the disk
//     itself (and one whose wait the crash cut short never returned).
//   - The store records the boot it was last written in (meta "boot",
//     readBootID). The first admission in another boot recovers: it
//     records in every rule, at the latest instant a lost admission can
//     have, synced + syncEvery, what they can have used. A count rule gets
//     as many calls as any count rule with a window of at least syncEvery
//     allows (lost calls were admitted under it, within less than its
//     window), at most its own N; a cost rule is taken as full (a lost
//     Correct may have raised a cost by any amount). So no rule admits
//     more after the crash than it should have, and what the recovery
//     costs is at most syncEvery's worth of calls, only in windows still
//     open at the reboot: a per-second rule has left them by the time the
//     host is back, a daily one has not.
//
// A reboot without a crash recovers too: it cannot be told apart from a
// crash that lost nothing. Where the boots cannot be told apart
// (readBootID returns ""), nothing is recovered.
const syncEvery = time.Second

var (
	keyBoot   = []byte("boot")
	keySynced = []byte("synced")
)

// bootID is readBootID, read once per process.
var bootID = sync.OnceValue(readBootID)

// recoverCrash recovers from a crash of the host, as above, if the store
// in meta m was last written in another boot than this one, for the rules
// rs (store order) at the store's instant now, in a write transaction.
// It reports whether it wrote anything, which must then reach the disk at
// this commit.
func (s *Store) recoverCrash(m *bbolt.Bucket, rs []ruleState, now int64) (bool, error) {
	stored := m.Get(keyBoot)
	if s.boot == "" || string(stored) == s.boot {
		return false, nil
	}
	if err := m.Put(keyBoot, []byte(s.boot)); err != nil {
		return false, err
	}
	if stored == nil {
		return true, nil // a new store, or one written by an older pace: nothing to go by
	}
	at := getInt(m, keySynced) + int64(syncEvery)
	calls := int64(-1) // the most calls a count rule with a window of at least syncEvery allows
	for _, r := range s.ly.sorted {
		if !r.Cost && r.Window >= syncEvery && (calls < 0 || int64(r.N) < calls) {
			calls = int64(r.N)
		}
	}
	serial, expires := getInt(m, keySerial), getInt(m, keyExpires)
	for _, r := range rs {
		if at+r.w+r.g <= now {
			continue // every lost call has left this rule's window
		}
		held, err := r.trim(now)
		if err != nil {
			return false, err
		}
		lost := r.n
		if !r.cost && calls >= 0 {
			lost = min(lost, calls)
		}
		if r.g == 0 && !r.cost {
			for range lost { // a log entry per call
				serial++
				if err := r.record(at, uint64(serial), 1, held); err != nil {
					return false, err
				}
				held++
			}
		} else {
			serial++
			if err := r.record(at, uint64(serial), lost, held); err != nil {
				return false, err
			}
		}
		expires = max(expires, at+r.w+r.g)
	}
	if err := putInt(m, keySerial, serial); err != nil {
		return false, err
	}
	return true, putInt(m, keyExpires, expires)
}

// syncs reports whether the admission being recorded at now, in the
// store whose meta is m, waits for the disk: always with Options.Sync,
// else when the last one that did is syncEvery old or more, or when
// recovered says that the transaction recovered from a crash. If so it
// records now as the last such instant.
func (s *Store) syncs(m *bbolt.Bucket, now int64, recovered bool) (bool, error) {
	if !s.cf.Sync && !recovered && now-getInt(m, keySynced) < int64(syncEvery) {
		return false, nil
	}
	return true, putInt(m, keySynced, now)
}
