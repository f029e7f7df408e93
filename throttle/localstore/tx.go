package localstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"runtime/debug"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/internal/gate"
)

// Retry pacing after a transaction that failed for a reason that may pass
// (too many open files, a full disk).
const (
	minBackoff = 20 * time.Millisecond
	maxBackoff = time.Second
)

// errRefused ends a transaction that decided to record nothing: bbolt
// rolls it back, which costs no write.
var errRefused = errors.New("refused")

// paths are the files of one quota.
type paths struct {
	key  string
	db   string // the bbolt store
	lock string // taken for each transaction
	open string // held shared by every open Store; Reset takes it exclusive
	slot string // directory of the slot files
}

func pathsOf(dir, key string) paths {
	base := dir + string(os.PathSeparator) + key
	return paths{key: key, db: base + ".db", lock: base + ".lock", open: base + ".open", slot: base + ".slots"}
}

// storeError is an error of the store file that retrying cannot fix: a
// file that is not a pace store, is damaged, or has a newer format.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// damaged returns the error for a store file that bbolt cannot read.
func (p paths) damaged(why any) error {
	return &storeError{fmt.Errorf("localstore: quota %q: store %s is damaged or not a pace store (%v); "+
		"move it away to start the quota over: %w", p.key, p.db, why, throttle.ErrBackend)}
}

// txOptions say how withDB opens a store.
type txOptions struct {
	lock     *txLock       // the transaction lock; nil: p.lock, opened for this transaction
	perm     os.FileMode   // of the store file, if it is created (permIn)
	timeout  time.Duration // the longest wait for the lock
	readOnly bool          // the store must exist, and is opened read-only
	noSync   bool          // commits do not wait for the disk
	closed   <-chan struct{}
}

// withDB opens the store of p with the transaction lock held, runs fn on
// it and closes it. Other processes wait for the lock meanwhile: fn must
// be short. A store that bbolt cannot read, or that panics bbolt, is
// reported damaged.
func withDB(ctx context.Context, p paths, o txOptions, fn func(*bbolt.DB) error) (err error) {
	lk := o.lock
	if lk == nil {
		lk = &txLock{path: p.lock}
		defer lk.close()
	}
	if err := lk.lock(ctx, o.timeout, o.closed); err != nil {
		return err
	}
	defer lk.unlock()
	// bbolt would write the meta pages of an empty file (through a
	// read-only descriptor with o.readOnly), and refuse one whose
	// creation did not finish.
	if err := p.checkNew(o.readOnly); err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			err = p.damaged(v)
		}
	}()
	// A store file cut short under the mapping faults on access: a panic
	// that the recover above reports, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	// The lock above keeps every pace out; bbolt's own lock on the file
	// waits (polling every 50ms) only for other programs.
	db, f, err := openBolt(p.db, o.perm, o.bolt())
	if err != nil {
		return p.openError(err)
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := p.checkMetas(f, db.Info().PageSize); err != nil {
		return err
	}
	return fn(db)
}

// checkMetas returns the damaged error for the store file f, opened by
// bbolt with pages of pageSize, if one of its two meta pages is not
// bbolt's (metaPagesSound).
func (p paths) checkMetas(f *os.File, pageSize int) error {
	var b []byte
	if _, err := currentMeta(f, pageSize, &b); err != nil {
		return err
	}
	if !metaPagesSound(b, pageSize) {
		return p.damaged("a meta page is not bbolt's")
	}
	return nil
}

// bolt returns bbolt's options for o.
func (o txOptions) bolt() *bbolt.Options {
	return &bbolt.Options{Timeout: o.timeout, ReadOnly: o.readOnly, NoSync: o.noSync, NoStatistics: true}
}

// openError returns the error of withDB for err from bbolt.Open.
func (p paths) openError(err error) error {
	var se *storeError
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return &lockTimeoutError{path: p.db}
	case errors.As(err, &se):
		return err
	case !ioError(err):
		// ErrInvalid, ErrChecksum, ErrVersionMismatch, "file size
		// too small" and the like: what the file holds.
		return p.damaged(err)
	}
	return err
}

// openBolt opens the store file at path with bbolt, through openFile (no
// link followed, a regular file only), giving it the group's bits of perm
// unless o.ReadOnly. It returns bbolt's descriptor of the file too.
func openBolt(path string, perm os.FileMode, o *bbolt.Options) (*bbolt.DB, *os.File, error) {
	opts := *o
	var f *os.File
	opts.OpenFile = func(name string, flag int, mode os.FileMode) (*os.File, error) {
		var err error
		f, err = openFile(name, flag, mode)
		return f, err
	}
	db, err := bbolt.Open(path, perm, &opts)
	if err != nil {
		return nil, nil, err
	}
	if !o.ReadOnly {
		sharePerm(f, perm)
	}
	return db, f, nil
}

// errNotKept says that txKept did not run a read-only transaction
// because there is no store file to keep open (none yet, or an empty
// one) or it could not be opened for writing: the caller reads it with
// withDB, as a process that keeps nothing open does, and gets the same
// answer or error.
var errNotKept = errors.New("not kept")

// txKept runs fn in a transaction of the store file kept open between
// transactions (keep.go), as withDB does, opening it if need be: a write
// transaction, or with o.readOnly a read-only one, which opens the file
// only if it is a store already (else errNotKept). It requires s.txMu.
//
// The read-only transaction is Open's check of the stored rules: done
// through the file kept open, the first admission reuses it, so that a
// process admitting one call (pace exec) opens and maps the store once.
func (s *Store) txKept(ctx context.Context, o txOptions, fn func(*bbolt.Tx) error) (err error) {
	if err := s.txLock.lock(ctx, o.timeout, o.closed); err != nil {
		return err
	}
	defer s.txLock.unlock()
	defer func() {
		if v := recover(); v != nil {
			if s.kept != nil {
				s.kept.abandon()
				s.kept = nil
			}
			err = s.paths.damaged(v)
		}
	}()
	// A store file cut short under the mapping faults on access: a panic
	// that the recover above reports, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if k := s.kept; k != nil {
		ok, err := k.reuse(s.paths)
		if !ok {
			s.closeKept()
			if err != nil {
				return err
			}
		}
	}
	if s.kept == nil {
		bo := o.bolt()
		if o.readOnly {
			// Creating the store, or writing the meta pages of an empty
			// file or over an unfinished one (shorter than any store
			// created here: checkNew), is the first admission's business.
			if fi, err := os.Lstat(s.paths.db); err != nil || fi.Size() < 4*int64(os.Getpagesize()) || !fi.Mode().IsRegular() {
				return errNotKept
			}
			bo.ReadOnly = false
		}
		if !o.readOnly {
			if err := s.paths.checkNew(false); err != nil {
				return err
			}
		}
		k, err := openKept(s.paths.db, bo, o.perm)
		if err != nil {
			// A file that cannot be opened for writing is read as
			// withDB reads it; one that stayed locked for the timeout
			// would be waited for again there.
			if o.readOnly && !errors.Is(err, bolterrors.ErrTimeout) {
				return errNotKept
			}
			return s.paths.openError(err)
		}
		if err := s.paths.checkMetas(k.f, int(k.pageSize)); err != nil {
			_ = k.close()
			return err
		}
		s.kept = k
	}
	k := s.kept
	k.db.NoSync = o.noSync
	if o.readOnly {
		err = k.db.View(fn)
	} else {
		err = k.db.Update(fn)
	}
	if err != nil && !errors.Is(err, errRefused) || !k.committed() {
		// bbolt failed in the commit, or what it left cannot be read:
		// the next transaction opens the file afresh.
		s.closeKept()
		return err
	}
	k.release()
	return err
}

// closeKept closes the store file kept open, if any. It requires s.txMu.
func (s *Store) closeKept() {
	if s.kept != nil {
		_ = s.kept.close()
		s.kept = nil
	}
}

// ioError reports whether err is the operating system's (a failed
// open, read, write, sync, mmap or lock), not about what the store holds.
func ioError(err error) bool {
	var pe *fs.PathError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &errno)
}

// transient reports whether err, from withDB, may pass if the
// transaction is tried again: an error of the operating system, such as
// too many open files or a full disk, but not a missing file or a
// permission refused.
func transient(err error) bool {
	return ioError(err) && !errors.Is(err, fs.ErrPermission) && !errors.Is(err, fs.ErrNotExist)
}

// update runs fn in one read-write transaction of the store, with this
// process's transactions one at a time. fn returns errRefused to record
// nothing. A failure that may pass is retried with capped exponential
// backoff until the timeout has passed since the first; then, or at once
// for one that cannot pass, update gives up with an error wrapping
// throttle.ErrBackend (or ctx's error, ErrClosed, a *throttle.MismatchError).
func (s *Store) update(ctx context.Context, fn func(*bbolt.Tx) error) error {
	return s.transact(ctx, true, fn)
}

// view runs fn in one read-only transaction of the store, as update does
// (retries included); it commits nothing, and so writes nothing. A store
// that does not exist yet gives fs.ErrNotExist.
func (s *Store) view(ctx context.Context, fn func(*bbolt.Tx) error) error {
	return s.transact(ctx, false, fn)
}

// transact runs fn in one transaction, read-write if write.
func (s *Store) transact(ctx context.Context, write bool, fn func(*bbolt.Tx) error) error {
	s.txMu.Lock()
	defer s.txMu.Unlock()
	var failingSince time.Time
	backoff := minBackoff
	for {
		s.roundTrips.Add(1)
		start := time.Now()
		o := txOptions{lock: &s.txLock, perm: s.perm, timeout: s.cf.Timeout,
			readOnly: !write, noSync: !s.cf.Sync, closed: s.core.Closed()}
		err := errNotKept
		if keepOpen {
			err = s.txKept(ctx, o, fn)
		}
		if errors.Is(err, errNotKept) {
			err = withDB(ctx, s.paths, o, func(db *bbolt.DB) error {
				if !write {
					return db.View(fn)
				}
				return db.Update(fn)
			})
		}
		if err == nil || errors.Is(err, errRefused) || !write && errors.Is(err, fs.ErrNotExist) {
			return err
		}
		var me *throttle.MismatchError
		switch {
		case errors.As(err, &me), ctx.Err() != nil && errors.Is(err, ctx.Err()), errors.Is(err, throttle.ErrClosed):
			return err
		}
		s.failures.Add(1)
		var se *storeError
		switch {
		case errors.As(err, &se):
			return err
		case errors.Is(err, errLockTimeout):
			return fmt.Errorf("localstore: quota %q: %v for %s: %w", s.key, err, s.cf.Timeout, throttle.ErrBackend)
		case !transient(err):
			return fmt.Errorf("localstore: quota %q: %w: %w", s.key, throttle.ErrBackend, err)
		}
		if failingSince.IsZero() {
			failingSince = start
		}
		left := s.cf.Timeout - time.Since(failingSince)
		if left <= 0 {
			return fmt.Errorf("localstore: quota %q: store %s failing for %s: %w: %w",
				s.key, s.paths.db, s.cf.Timeout, throttle.ErrBackend, err)
		}
		d := backoff/2 + time.Duration(mrand.Int64N(int64(backoff/2)+1))
		if err := gate.Sleep(ctx, s.core.Closed(), min(d, left)); err != nil {
			return err
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// meta returns the meta bucket of tx, creating it in a new store, after
// checking that the store is a pace store of a format this code knows.
// In a read-only transaction of a new store it returns nil.
func (p paths) meta(tx *bbolt.Tx) (*bbolt.Bucket, error) {
	m := tx.Bucket(metaBucket)
	if m == nil {
		empty := true
		_ = tx.ForEach(func([]byte, *bbolt.Bucket) error { empty = false; return nil })
		if !empty {
			return nil, p.damaged("no meta bucket")
		}
		if !tx.Writable() {
			return nil, nil
		}
		var err error
		if m, err = tx.CreateBucket(metaBucket); err != nil {
			return nil, err
		}
		return m, putInt(m, keyVersion, formatVersion)
	}
	switch v := getInt(m, keyVersion); {
	case v > formatVersion:
		return nil, &storeError{fmt.Errorf("localstore: quota %q: store %s has format version %d, newer than this pace knows (%d); "+
			"use a newer pace, or move the file away to start the quota over: %w", p.key, p.db, v, formatVersion, throttle.ErrBackend)}
	case v < 1:
		return nil, p.damaged(fmt.Sprintf("format version %d", v))
	}
	return m, nil
}
