package localstore

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// errLockTimeout reports a lock that another process held for longer than
// the timeout. The error returned is a *lockTimeoutError, which names the
// file.
var errLockTimeout = errors.New("locked by another process")

// lockTimeoutError is errLockTimeout for the file at path: the quota's
// transaction lock (NAME.lock), its open lock (NAME.open), or the store
// file (bbolt's own lock), whichever another process held.
type lockTimeoutError struct{ path string }

func (e *lockTimeoutError) Error() string { return e.path + " stayed locked by another process" }

// Is makes errors.Is(err, errLockTimeout) true.
func (e *lockTimeoutError) Is(target error) bool { return target == errLockTimeout }

// openLockFile opens (creating if need be) the lock file at path.
func openLockFile(path string) (*os.File, error) {
	return openShared(path, os.O_RDWR|os.O_CREATE)
}

// lockWait opens the lock file at path and takes a lock on it, exclusive
// or shared, waiting up to timeout for other holders. It returns the open
// file holding the lock: closing it releases the lock. It gives up with
// ctx's error, throttle.ErrClosed when closed is closed (nil: never), or
// errLockTimeout.
func lockWait(ctx context.Context, path string, exclusive bool, timeout time.Duration, closed <-chan struct{}) (*os.File, error) {
	f, err := openLockFile(path)
	if err != nil {
		return nil, err
	}
	if err := lockOn(ctx, f, exclusive, timeout, closed); err != nil {
		return nil, err // lockOn closed f, or left it to be closed
	}
	return f, nil
}

// lockOn takes a lock on the open lock file f, as lockWait does. If it
// fails, f is closed, or left to a goroutine that closes it: the caller
// must not use f again.
//
// The wait is the kernel's (flock or LockFileEx without "fail at once"),
// so the holder's release wakes a waiter at once, without polling. Such a
// wait cannot be interrupted: a caller that gives up leaves it to a
// goroutine that releases the lock as soon as it gets it and closes the
// file.
func lockOn(ctx context.Context, f *os.File, exclusive bool, timeout time.Duration, closed <-chan struct{}) error {
	ok, err := tryLock(f, exclusive)
	if err != nil || ok {
		if err != nil {
			_ = f.Close()
		}
		return err
	}
	got := make(chan error, 1)
	go func() { got <- lockBlocking(f, exclusive) }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-got:
		if err != nil {
			_ = f.Close()
		}
		return err
	case <-ctx.Done():
		err = ctx.Err()
	case <-closed:
		err = throttle.ErrClosed
	case <-t.C:
		err = &lockTimeoutError{path: f.Name()}
	}
	go func() {
		<-got // closing f releases the lock if it was taken
		_ = f.Close()
	}()
	return err
}

// txLock is a quota's transaction lock (NAME.lock), its file kept open
// between transactions: opening and closing it for each one cost two
// system calls and a stat of the directory. Its methods need the caller's
// own exclusion (Store.txMu).
type txLock struct {
	path string
	f    *os.File // nil until the first lock, and after a lock given up
}

// lock takes the lock, exclusive, as lockWait does.
func (l *txLock) lock(ctx context.Context, timeout time.Duration, closed <-chan struct{}) error {
	if l.f != nil && unlinked(l.f) {
		// The lock file was removed (the state directory deleted by
		// hand): the others lock a new one, and so must this process,
		// or the quota would be split in two.
		_ = l.f.Close()
		l.f = nil
	}
	if l.f == nil {
		f, err := openLockFile(l.path)
		if err != nil {
			return err
		}
		l.f = f
	}
	if err := lockOn(ctx, l.f, true, timeout, closed); err != nil {
		// The file is closed, or will be once a wait given up ends: a
		// lock taken through it later must not be mistaken for this
		// process's next one.
		l.f = nil
		return err
	}
	return nil
}

// unlock releases the lock taken by lock.
func (l *txLock) unlock() {
	if err := unlock(l.f); err != nil {
		_ = l.f.Close() // closing releases it too
		l.f = nil
	}
}

// close closes the lock file.
func (l *txLock) close() {
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// release unlocks and closes a file that lockWait returned.
func release(f *os.File) {
	_ = unlock(f)
	_ = f.Close()
}
