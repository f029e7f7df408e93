package localstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pace-cli/pace/throttle"
)

// Quota is what Inspect found of a quota: its rules and how full they
// are, and who holds its slots.
type Quota struct {
	Key  string
	Path string // the store file
	// Spec is the rule spec the quota is kept with, empty until a call
	// has been recorded. Rules and GlobalJobs are read from it.
	Spec       string
	Rules      []throttle.RuleStats // in store order: sorted by window; Used and Usage at Now, without margin
	GlobalJobs int
	// Now is the store's instant when it was read (the host's clock but
	// after a step back; see the package documentation).
	Now time.Time
	// Next is when a call of cost 1 could go, by the rules alone and
	// without margin: Now if at once.
	Next time.Time
	// Expired reports that every call recorded has left its window, so
	// that a process with other rules may take the quota over.
	Expired bool
	// Slots lists the slots held, and those whose holder died without
	// giving them back (then free), by index.
	Slots []Slot
}

// Slot is one slot of a quota's cap on calls in flight.
type Slot struct {
	Index int
	// PID is the holder's process id, Started when it opened the quota
	// and Since when it took the slot; zero if it has not said yet.
	PID     int
	Started time.Time
	Since   time.Time
	// Alive reports that a process holds the slot now. A slot whose
	// holder died is free, and shows the dead holder until it is taken
	// again.
	Alive bool
}

// Inspect reads the quota key kept in dir without keeping rules of its
// own and without changing it. It takes the store's lock for one
// read-only transaction, and tries each slot's lock to tell whether its
// holder is alive (a process waiting for a slot at that instant tries
// again at its next poll). A quota with no store returns an error
// wrapping fs.ErrNotExist; a damaged store or one of a newer format, an
// error wrapping throttle.ErrBackend.
func Inspect(dir, key string) (*Quota, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	p := pathsOf(dir, key)
	q := &Quota{Key: key, Path: p.db}
	// Neither a store nor its lock: nothing to read, and no lock file to
	// leave behind (taking the lock would create one, for a quota that
	// does not exist). A lock that is there is taken and checked as
	// always (a symbolic link planted there is refused).
	if _, err := os.Lstat(p.db); errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(p.lock); errors.Is(lerr, fs.ErrNotExist) {
			return nil, fmt.Errorf("localstore: no quota %q in %s: %w", key, dir, err)
		}
	}
	err := withDB(context.Background(), p, txOptions{timeout: DefaultTimeout, readOnly: true}, func(db *bbolt.DB) error {
		return db.View(func(tx *bbolt.Tx) error { return q.read(p, tx) })
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("localstore: no quota %q in %s: %w", key, dir, err)
	case errors.Is(err, errLockTimeout):
		return nil, fmt.Errorf("localstore: quota %q: %v for %s: %w", key, err, DefaultTimeout, throttle.ErrBackend)
	case err != nil:
		var se *storeError
		if !errors.As(err, &se) && !errors.Is(err, throttle.ErrBackend) {
			// The store could not be read (a read-only file system, no
			// permission): the backend failed, not the caller.
			err = fmt.Errorf("localstore: inspect quota %q: %w: %w", key, throttle.ErrBackend, err)
		}
		return nil, err
	}
	if q.Slots, err = readSlots(p.slot); err != nil {
		return nil, fmt.Errorf("localstore: inspect quota %q: %w: %w", key, throttle.ErrBackend, err)
	}
	return q, nil
}

// read fills q from the store in tx.
func (q *Quota) read(p paths, tx *bbolt.Tx) error {
	m, err := p.meta(tx)
	if err != nil || m == nil {
		q.Now, q.Next, q.Expired = time.Now(), time.Now(), true
		return err
	}
	now := advance(getInt(m, keyLast), getInt(m, keyWall), time.Now().UnixNano())
	q.Now, q.Next = time.Unix(0, now), time.Unix(0, now)
	q.Expired = now >= getInt(m, keyExpires)
	q.Spec = string(m.Get(keySpec))
	ly, err := parseSpec(q.Spec)
	if err != nil {
		return p.damaged(err)
	}
	q.GlobalJobs = ly.globalJobs
	var wait int64
	for j, r := range ly.sorted {
		st := newRuleState(tx.Bucket(ly.bucketName(j)), r, ly.counter[j], 0)
		used := st.heldAt(now)
		wait = max(wait, st.delay(now, used, 1))
		q.Rules = append(q.Rules, throttle.RuleStats{Rule: r, Counter: ly.counter[j], Used: int(used), Usage: float64(used) / float64(r.N)})
	}
	q.Next = q.Next.Add(time.Duration(wait))
	return nil
}

// readSlots lists the slots in dir that are held, or that a dead holder
// left its name in.
func readSlots(dir string) ([]Slot, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var slots []Slot
	for _, e := range ents {
		i, err := strconv.Atoi(e.Name())
		if err != nil || i < 0 || !e.Type().IsRegular() {
			continue
		}
		sl, err := readSlot(slotPath(dir, i), i)
		if err != nil {
			return nil, err
		}
		if sl.Alive || sl.PID != 0 {
			slots = append(slots, sl)
		}
	}
	slices.SortFunc(slots, func(a, b Slot) int { return a.Index - b.Index })
	return slots, nil
}

// readSlot reads the file of slot i, and tries its lock to tell whether
// its holder is alive.
func readSlot(path string, i int) (Slot, error) {
	sl := Slot{Index: i}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return sl, nil
	}
	if err != nil {
		return sl, err
	}
	defer f.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		return sl, err
	}
	if h, ok := parseHolder(string(b)); ok {
		sl.PID, sl.Started, sl.Since = h.PID, h.Started, h.Since
	}
	free, err := tryLock(f, true)
	if err != nil {
		return sl, err
	}
	if free {
		_ = unlock(f)
	}
	sl.Alive = !free
	return sl, nil
}
