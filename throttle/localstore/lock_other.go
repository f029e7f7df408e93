//go:build !windows && (!unix || solaris || aix)

package localstore

import (
	"fmt"
	"os"
	"runtime"
)

// errNoLocks is returned on systems without flock(2) or LockFileEx: the
// store cannot exclude other processes there, so it refuses to run
// rather than admit calls it could not keep apart.
var errNoLocks = fmt.Errorf("localstore: file locks are not supported on %s", runtime.GOOS)

func tryLock(*os.File, bool) (bool, error) { return false, errNoLocks }

func lockBlocking(*os.File, bool) error { return errNoLocks }

func unlock(*os.File) error { return errNoLocks }

func unlinked(*os.File) bool { return false }
