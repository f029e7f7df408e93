package localstore

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/pace-cli/pace/throttle"
)

// errLockTimeout reports a lock that another process held for longer than
// the timeout.
var errLockTimeout = errors.New("locked by another process")

// openLockFile opens (creating if need be) the lock file at path.
func openLockFile(path string) (*os.File, error) {
	return openShared(path, os.O_RDWR|os.O_CREATE)
}

// lockWait opens the lock file at path and takes a lock on it, exclusive
// or shared, waiting up to timeout for other holders. It returns the open
// file holding the lock: closing it releases the lock. It gives up with
// ctx's error, throttle.ErrClosed when closed is closed (nil: never), or
// errLockTimeout.
//
// The wait is the kernel's (flock or LockFileEx without "fail at once"),
// so the holder's release wakes a waiter at once, without polling. Such a
// wait cannot be interrupted: a caller that gives up leaves it to a
// goroutine that releases the lock as soon as it gets it and closes the
// file.
func lockWait(ctx context.Context, path string, exclusive bool, timeout time.Duration, closed <-chan struct{}) (*os.File, error) {
	f, err := openLockFile(path)
	if err != nil {
		return nil, err
	}
	ok, err := tryLock(f, exclusive)
	if err != nil || ok {
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		return f, nil
	}
	got := make(chan error, 1)
	go func() { got <- lockBlocking(f, exclusive) }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-got:
		if err != nil {
			_ = f.Close()
			return nil, err
		}
		return f, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-closed:
		err = throttle.ErrClosed
	case <-t.C:
		err = errLockTimeout
	}
	go func() {
		<-got // closing f releases the lock if it was taken
		_ = f.Close()
	}()
	return nil, err
}

// release unlocks and closes a file that lockWait returned.
func release(f *os.File) {
	_ = unlock(f)
	_ = f.Close()
}
