package localstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/internal/gate"
	"github.com/pace-cli/pace/throttle/internal/link"
)

// Defaults of the Options.
const (
	DefaultKey     = "default"
	DefaultTimeout = 10 * time.Second
	DefaultJitter  = 10 * time.Millisecond
)

// slotPoll is how often a caller waiting for a slot tries them again:
// nobody announces a release, and a slot whose holder died is free at
// once, so a waiter finds it within one poll.
const slotPoll = 20 * time.Millisecond

// Options configure a Store.
type Options struct {
	// Dir is the directory of the stores; empty means DefaultDir().
	Dir string
	// Key names the quota, and its files; empty means DefaultKey. It may
	// hold only letters, digits, '.', '_' and '-', at most 128 of them, and
	// may not be "." or "..".
	Key string
	// Rules are kept for every process sharing the quota. An empty set
	// limits only the calls in flight (GlobalJobs).
	Rules []throttle.Rule
	// Margin widens every rule's window, as throttle.Options.Margin does.
	// Processes sharing a quota should use the same margin: each forgets
	// calls older than its own window plus margin, so the host keeps the
	// smallest margin among them.
	Margin time.Duration
	// GlobalJobs caps the calls in flight across every process sharing
	// the quota: Admit takes one of GlobalJobs slots, each a lock file,
	// before it waits for the rates. 0 means no cap.
	GlobalJobs int
	// CounterAbove keeps every rule with N > CounterAbove in a bounded
	// counter instead of an exact log; 0 means 100,000,
	// negative counters for every rule.
	CounterAbove int
	// FixedMargin says that this process never lowers its margin, as
	// pace exec, which admits one call at a fixed --margin, never does.
	// Its margin is then kept under the margin itself rather than under
	// this process: one entry for every process with that margin, which
	// each moves later and none lowers. A quota used by many short
	// processes so keeps one entry per margin, not one per process for as
	// long as their calls count (a day under a daily rule), which every
	// transaction would read.
	FixedMargin bool
	// Timeout is how long a transaction may wait for another process's
	// lock on the store, or keep failing, before giving up with an error
	// wrapping throttle.ErrBackend; 0 means DefaultTimeout.
	Timeout time.Duration
	// Jitter is the most random delay added to a wait a transaction
	// asked for (at most 5% of that wait), so that processes woken by the
	// same expiry do not all ask at once; 0 means DefaultJitter, negative
	// none.
	Jitter time.Duration
	// Sync makes every transaction that records a call wait until its
	// writes are on the disk (bbolt's two fsyncs), so that an admission
	// survives a crash of the host or a power cut. Without it (the
	// default) a transaction ends once its writes are in the kernel's
	// cache: a process killed at any point still leaves the store whole
	// and every admission recorded, but a crash of the host may lose the
	// admissions of its last moments, so that a rule may admit up to what
	// they used again after the reboot (at most N per rule, and only in
	// windows still open at the crash), or leave a store that must be
	// moved away. See "Durability" in the package documentation.
	Sync bool

	slotPoll time.Duration // tests shorten it
	boot     string        // tests: the host's boot, instead of bootID()
}

// Store keeps rules for every process on a host that shares a quota
// through the local store. Most callers want Admit. Make one with Open.
// It is safe for concurrent use and satisfies throttle.Backend. Close
// gives back the slots it holds.
type Store struct {
	cf      Options
	key     string
	paths   paths
	rules   []throttle.Rule // in the order given
	order   []int           // order[j] = index in rules of the j-th rule in store order
	ly      layout
	names   [][]byte // bucket of each rule, store order
	opened  time.Time
	present *os.File // shared lock on paths.open for the Store's life
	slots   *slotSet // nil without GlobalJobs
	txHook  func()   // tests: called in an admission's transaction, after the records
	boot    string   // the host's current boot (bootID), "" if unknown

	txMu   sync.Mutex  // one transaction at a time in this process
	txLock txLock      // requires txMu
	kept   *keptDB     // the store file kept open between transactions (keep.go); requires txMu
	perm   os.FileMode // of the store file, if a transaction creates it

	roundTrips atomic.Int64
	failures   atomic.Int64

	id []byte // this store's id among the processes sharing the quota

	// core keeps the admission turn, waits, pauses, margins, the tally
	// and the calls in flight; the store brings its decisions and slots.
	core *gate.Core
}

// Open returns a store that keeps opts.Rules for every process on this
// host sharing the quota opts.Key, kept in opts.Dir (created 0700 if
// need be), after checking that the quota is not kept with other rules.
// Its errors are a *throttle.MismatchError (the quota is kept with other
// rules), throttle.ErrBackend (the store is damaged,
// newer than this code, or stayed locked for the timeout),
// a *throttle.RuleError, or are ctx's; a bad key or directory gets a
// plain error that quotes it.
func Open(ctx context.Context, opts Options) (*Store, error) {
	cf := opts
	cf.Key = cmp.Or(cf.Key, DefaultKey)
	cf.Timeout = cmp.Or(cf.Timeout, DefaultTimeout)
	cf.slotPoll = cmp.Or(cf.slotPoll, slotPoll)
	switch {
	case cf.Jitter == 0:
		cf.Jitter = DefaultJitter
	case cf.Jitter < 0:
		cf.Jitter = 0
	}
	switch {
	case cf.CounterAbove == 0:
		cf.CounterAbove = link.CounterAbove
	case cf.CounterAbove < 0:
		cf.CounterAbove = 0
	}
	cf.Margin = link.ClampMargin(cf.Margin)
	cf.GlobalJobs = max(cf.GlobalJobs, 0)
	if err := checkKey(cf.Key); err != nil {
		return nil, err
	}
	if err := gate.Validate(cf.Rules); err != nil {
		return nil, err
	}
	if cf.Dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		cf.Dir = d
	}
	if err := os.MkdirAll(cf.Dir, 0o700); err != nil {
		return nil, unusableDir(cf.Dir, err)
	}
	perm, _ := permIn(cf.Dir)
	s := &Store{
		cf:     cf,
		key:    cf.Key,
		paths:  pathsOf(cf.Dir, cf.Key),
		txLock: txLock{path: pathsOf(cf.Dir, cf.Key).lock},
		rules:  slices.Clone(cf.Rules),
		opened: time.Now(),
		perm:   perm,
		boot:   cmp.Or(cf.boot, bootID()),
		id:     newID(),
	}
	s.core = gate.NewCore(gate.Config{Name: "localstore", Rules: s.rules, GlobalJobs: cf.GlobalJobs,
		Margin: cf.Margin, Jitter: cf.Jitter, Timeout: cf.Timeout}, (*storeSide)(s))
	s.ly, s.order = newLayout(s.rules, cf.CounterAbove, cf.GlobalJobs)
	for j := range s.ly.sorted {
		s.names = append(s.names, s.ly.bucketName(j))
	}
	// Reset holds this lock exclusive while it removes the files.
	f, err := lockWait(ctx, s.paths.open, false, cf.Timeout, nil)
	if err != nil {
		var se *storeError
		switch {
		case errors.As(err, &se):
			// Something at the name that is not a file: said as is.
		case errors.Is(err, errLockTimeout):
			err = fmt.Errorf("localstore: quota %q: %v for %s: %w", s.key, err, cf.Timeout, throttle.ErrBackend)
		case ctx.Err() == nil:
			err = unusableDir(cf.Dir, err)
		}
		return nil, err
	}
	s.present = f
	if cf.GlobalJobs > 0 {
		if err := mkdirShared(s.paths.slot); err != nil {
			_ = s.present.Close()
			if se := (*storeError)(nil); !errors.As(err, &se) {
				err = unusableDir(cf.Dir, err)
			}
			return nil, err
		}
		if s.slots, err = newSlotSet(s.paths.slot, cf.GlobalJobs); err != nil {
			_ = s.present.Close()
			if se := (*storeError)(nil); !errors.As(err, &se) {
				err = unusableDir(cf.Dir, err)
			}
			return nil, err
		}
	}
	if err := s.checkStored(ctx); err != nil {
		s.txLock.close()
		_ = s.present.Close()
		if s.slots != nil {
			s.slots.close()
		}
		return nil, err
	}
	return s, nil
}

// newID returns a new store's id among the processes sharing its quota
// (the key of its margin): 64 random bits in hex. The runtime's
// generator, seeded from the kernel at each process's start, makes ids
// that differ between processes, which is all they need; crypto/rand
// costs a process that admits one call (pace exec) more to set up.
func newID() []byte { return fmt.Appendf(nil, "%016x", mrand.Uint64()) }

// unusableDir is the error of Open when the state directory dir cannot
// hold the store (a file in its place, no permission to write, a
// read-only file system): the store failed, and says where.
func unusableDir(dir string, err error) error {
	return fmt.Errorf("localstore: state directory %s: %w (want a directory this user can write in): %w", dir, err, throttle.ErrBackend)
}

// checkStored checks, before any job runs, that the quota is not kept
// with other rules. It only reads: a commit, even an empty one, would cost
// the fsyncs of a real one, and the first admission creates the store.
func (s *Store) checkStored(ctx context.Context) error {
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		m, err := s.paths.meta(tx)
		if err != nil || m == nil {
			return err
		}
		now := advance(getInt(m, keyLast), getInt(m, keyWall), time.Now().UnixNano())
		return s.checkSpec(m, now)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no store yet: nobody keeps the quota
	}
	return err
}

// checkSpec returns a *throttle.MismatchError if the store keeps the quota with
// another spec that has not expired at now.
func (s *Store) checkSpec(m *bbolt.Bucket, now int64) error {
	if stored := m.Get(keySpec); stored != nil && string(stored) != s.ly.spec && now < getInt(m, keyExpires) {
		return &throttle.MismatchError{Key: s.key, Stored: string(stored), Spec: s.ly.spec}
	}
	return nil
}

// Spec returns the rule spec this store keeps with its quota and compares
// at every admission: its rules sorted by window, plus whatever else every
// process sharing the quota must agree on (the in-flight cap), in the
// same form as redisrate's.
func (s *Store) Spec() string { return s.ly.spec }

// Rules returns the store's rules, in the order given.
func (s *Store) Rules() []throttle.Rule { return slices.Clone(s.rules) }

// Path returns the store's file.
func (s *Store) Path() string { return s.paths.db }

// SlotFile returns the file of the --global-jobs slot admission a holds,
// nil if it holds none (backend.Inheritable). The slot is a lock on that
// open file, which the kernel lets go of only when every descriptor of it
// is closed: a command that inherits it keeps the slot held for as long
// as it, or anything it started, runs, even after this process was
// killed. The file stays the store's.
func (s *Store) SlotFile(a throttle.Admission) *os.File {
	i, ok := s.core.Slot(a).(int)
	if !ok || s.slots == nil {
		return nil
	}
	return s.slots.file(i)
}

// rulesAt returns the state of every rule of s in tx, in store order,
// creating their buckets if create.
func (s *Store) rulesAt(tx *bbolt.Tx, margin time.Duration, create bool) ([]ruleState, error) {
	rs := make([]ruleState, len(s.ly.sorted))
	for j, r := range s.ly.sorted {
		b := tx.Bucket(s.names[j])
		if b == nil && create {
			var err error
			if b, err = tx.CreateBucket(s.names[j]); err != nil {
				return nil, err
			}
		}
		rs[j] = newRuleState(b, r, s.ly.counter[j], margin)
	}
	return rs, nil
}

func newRuleState(b *bbolt.Bucket, r throttle.Rule, counter bool, margin time.Duration) ruleState {
	st := ruleState{b: b, n: int64(r.N), w: int64(r.Window + margin), cost: r.Cost}
	if counter {
		st.g = counterWidth(int64(r.Window))
	}
	return st
}

// weight returns what a call of the given cost weighs in r.
func weight(r throttle.Rule, cost int) int64 {
	if r.Cost {
		return int64(cost)
	}
	return 1
}

// storeSide is a Store as its core sees it (gate.Store): the decisions
// and the slots.
type storeSide Store

// Admit runs one admission transaction for the first of the calls asked
// (gate.Store allows a store to admit fewer than fit): it checks every
// rule at one instant and, only if all allow a call of that cost, records
// it in all of them. It implements gate.Store. A transaction on this host
// takes no network round trip, so the calls behind it lose little by
// asking in their own transactions.
func (ss *storeSide) Admit(ctx context.Context, costs []int, margin time.Duration) (gate.Decision, error) {
	s := (*Store)(ss)
	cost := costs[0]
	var d gate.Decision
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		d = gate.Decision{Used: make([]int, len(s.rules))}
		m, err := s.paths.meta(tx)
		if err != nil {
			return err
		}
		last, wall, clock := getInt(m, keyLast), getInt(m, keyWall), time.Now().UnixNano()
		now := advance(last, wall, clock)
		d.At, d.Decided = time.Unix(0, now), time.Now()
		if err := s.checkSpec(m, now); err != nil {
			return err
		}
		if stored := m.Get(keySpec); stored != nil && string(stored) != s.ly.spec {
			// The quota's other rules have expired: take it over.
			if err := clearRules(tx); err != nil {
				return err
			}
		}
		fleet, err := s.fleetMargin(m, margin, now, now+s.inForce(margin))
		if err != nil {
			return err
		}
		d.Fleet = fleet
		rs, err := s.rulesAt(tx, fleet, true)
		if err != nil {
			return err
		}
		recovered, err := s.recoverCrash(m, rs, now)
		if err != nil {
			return err
		}
		held := make([]int64, len(rs))
		var wait int64
		for j, r := range rs {
			if held[j], err = r.trim(now); err != nil {
				return err
			}
			d.Used[s.order[j]] = int(held[j])
			if w := r.delay(now, held[j], weight(s.ly.sorted[j], cost)); w > wait {
				wait, d.Rule = w, s.order[j]
			}
		}
		if wait > 0 {
			d.Wait = time.Duration(wait)
			if recovered {
				// Keep the recovery, on the disk, even though the call
				// must wait.
				_, err := s.syncs(m, now, true)
				tx.DB().NoSync = false
				return err
			}
			return errRefused
		}
		d.Admitted = 1
		d.ID = uint64(getInt(m, keySerial)) + 1
		expires := getInt(m, keyExpires)
		for j, r := range rs {
			c := weight(s.ly.sorted[j], cost)
			if err := r.record(now, d.ID, c, held[j]); err != nil {
				return err
			}
			d.Used[s.order[j]] = int(held[j] + c)
			expires = max(expires, now+r.w+r.g)
		}
		for _, kv := range []struct {
			k []byte
			v int64
		}{{keyLast, now}, {keyWall, clock}, {keySerial, int64(d.ID)}, {keyExpires, expires}} {
			if err := putInt(m, kv.k, kv.v); err != nil {
				return err
			}
		}
		if string(m.Get(keySpec)) != s.ly.spec {
			if err := m.Put(keySpec, []byte(s.ly.spec)); err != nil {
				return err
			}
		}
		if sync, err := s.syncs(m, now, recovered); err != nil {
			return err
		} else if sync {
			tx.DB().NoSync = false // bbolt reads it at the commit, after fn
		}
		if s.txHook != nil {
			s.txHook()
		}
		return nil
	})
	if errors.Is(err, errRefused) {
		err = nil
	}
	return d, err
}

// clearRules deletes the state of every rule in tx.
func clearRules(tx *bbolt.Tx) error {
	var names [][]byte
	_ = tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
		if string(name) != string(metaBucket) {
			names = append(names, append([]byte(nil), name...))
		}
		return nil
	})
	for _, n := range names {
		if err := tx.DeleteBucket(n); err != nil {
			return err
		}
	}
	return nil
}

// Admit takes a slot (when GlobalJobs set a cap, waiting FIFO within this
// process for one), then waits until every rule admits a call of the
// given cost across every process sharing the quota, and records it. The
// Admission's At is the instant on the store's time (the host's clock;
// see the package documentation for clock steps). If Admit fails it holds
// nothing: a slot taken before the rate wait failed is given back.
//
// If ctx ends while a transaction is under way, the store may still have
// recorded the admission: it then counts against the quota although the
// caller does not go ahead. The error is only ever on that safe side.
func (s *Store) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	return s.core.Admit(ctx, cost)
}

// Correct changes the cost recorded for the admission id, admitted at
// at, in the cost rules still holding it, in one transaction, and returns
// each rule's use after it (given order); it implements gate.Store. It
// does not heed ctx's cancellation: the call was made and its true cost
// is owed, and a transaction on a local file does not wait on a network
// (the store's timeout bounds a lock held by another process).
func (ss *storeSide) Correct(ctx context.Context, id uint64, at time.Time, from, to int, margin time.Duration) ([]int, error) {
	s := (*Store)(ss)
	if !slices.ContainsFunc(s.rules, func(r throttle.Rule) bool { return r.Cost }) {
		return nil, nil
	}
	used := make([]int, len(s.rules))
	for i := range used {
		used[i] = -1
	}
	err := s.update(context.WithoutCancel(ctx), func(tx *bbolt.Tx) error {
		m, err := s.paths.meta(tx)
		if err != nil {
			return err
		}
		now := advance(getInt(m, keyLast), getInt(m, keyWall), time.Now().UnixNano())
		if stored := m.Get(keySpec); stored != nil && string(stored) != s.ly.spec {
			return errRefused // the quota was taken over: the call is forgotten
		}
		fleet, err := s.fleetMargin(m, margin, now, 0)
		if err != nil {
			return err
		}
		rs, err := s.rulesAt(tx, fleet, false)
		if err != nil {
			return err
		}
		for j, r := range rs {
			if r.b == nil {
				continue
			}
			held, err := r.trim(now)
			if err != nil {
				return err
			}
			if s.ly.sorted[j].Cost {
				if held, err = r.adjust(at.UnixNano(), id, int64(from), int64(to)); err != nil {
					return err
				}
			}
			used[s.order[j]] = int(held)
		}
		return nil
	})
	if errors.Is(err, errRefused) {
		return nil, nil
	}
	return used, err
}

// PauseUntil makes this process admit nothing before t, whatever the
// store says: a server that answered 429 with Retry-After has the last
// word. The pause is local; other processes sharing the quota are not
// told. reason says why, for diagnostics. A pause never shortens one
// already in force.
func (s *Store) PauseUntil(t time.Time, reason string) { s.core.PauseUntil(t, reason) }

// Seed does nothing: the store keeps the quota across runs.
func (s *Store) Seed([]throttle.Call) error { return nil }

// SetMargin makes d this process's margin from the next transaction on:
// every transaction widens the windows by the widest margin in force
// among the processes sharing the quota. A margin wider than that is also
// recorded in the store at once, in the background, so that the other
// processes widen their windows before this one next admits a call. A
// negative d is treated as 0.
func (s *Store) SetMargin(d time.Duration) { s.core.SetMargin(d) }

// Close gives back the slots still held, lets other processes reset the
// quota, and makes later and waiting calls return throttle.ErrClosed. A
// transaction under way is finished first. Call it once every call has
// finished. It returns nil.
func (s *Store) Close() error {
	if s.core.Shutdown() {
		s.txMu.Lock() // a transaction under way ends first
		s.closeKept()
		s.txLock.close()
		s.txMu.Unlock()
		s.core.ReleaseHeld(context.Background())
		if s.slots != nil {
			s.slots.close()
		}
		_ = s.present.Close()
	}
	return nil
}

// Stats returns a snapshot of the store's diagnostics. Used and Usage are
// the weights across every process as this process's last transaction
// found them (not refreshed since), and MaxInFlight is the cap across
// processes; every other counter is this process's own. Store counts
// transactions with the store file.
func (s *Store) Stats() throttle.Stats {
	return s.core.Stats(throttle.StoreStats{
		Name:       "local",
		RoundTrips: s.roundTrips.Load(),
		Failures:   s.failures.Load(),
	})
}
