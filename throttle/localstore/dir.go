package localstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/pace-cli/pace/throttle"
)

// DefaultDir returns the directory where the stores live unless told
// otherwise: $PACE_STATE_DIR if set, else $XDG_STATE_HOME/pace if that
// is an absolute path, else ~/.local/state/pace on Linux and the BSDs,
// ~/Library/Application Support/pace on macOS, %LocalAppData%\pace on
// Windows. It does not create it.
func DefaultDir() (string, error) {
	if d := os.Getenv("PACE_STATE_DIR"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "pace"), nil
	}
	if runtime.GOOS == "windows" {
		d := os.Getenv("LocalAppData")
		if d == "" {
			return "", errors.New("localstore: no state directory: set PACE_STATE_DIR, or %LocalAppData%")
		}
		return filepath.Join(d, "pace"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("localstore: no state directory: set PACE_STATE_DIR: %w", err)
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return filepath.Join(home, "Library", "Application Support", "pace"), nil
	}
	return filepath.Join(home, ".local", "state", "pace"), nil
}

// Keys returns the names of the quotas kept in dir, sorted: one per
// store file. A directory that does not exist holds none.
func Keys(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("localstore: %w", err)
	}
	var keys []string
	for _, e := range ents {
		if k, ok := strings.CutSuffix(e.Name(), ".db"); ok && e.Type().IsRegular() && checkKey(k) == nil {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// ErrInUse is wrapped by the error of Reset while a process has the quota
// open.
var ErrInUse = errors.New("quota in use")

// Reset forgets everything the quota key in dir holds: it removes its
// store file and its slot files, so that the next process starts afresh,
// with any rules. It refuses, with an error wrapping ErrInUse, while any
// process has the quota open (each open Store holds a shared lock that
// Reset must take exclusive): a running process would go on keeping the
// old state, and a slot file removed under its holder would let one more
// call in flight. It also refuses while Inspect reads it, for at most
// DefaultTimeout. Two empty lock files, NAME.lock and NAME.open, stay:
// removing a lock file that another process may be waiting on would
// split the quota in two. A quota with no store returns an error
// wrapping fs.ErrNotExist.
func Reset(dir, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	p := pathsOf(dir, key)
	_, dbErr := os.Lstat(p.db)
	_, slotErr := os.Lstat(p.slot)
	if errors.Is(dbErr, fs.ErrNotExist) && errors.Is(slotErr, fs.ErrNotExist) {
		return fmt.Errorf("localstore: no quota %q in %s: %w", key, dir, fs.ErrNotExist)
	}
	f, err := openLockFile(p.open)
	if err != nil {
		return resetFailed(key, err)
	}
	defer f.Close()
	ok, err := tryLock(f, true)
	if err != nil {
		return resetFailed(key, err)
	}
	if !ok {
		return fmt.Errorf("localstore: quota %q is open in another process; stop it first: %w", key, ErrInUse)
	}
	lf, err := lockWait(context.Background(), p.lock, true, DefaultTimeout, nil)
	if err != nil {
		return resetFailed(key, err) // it names p.lock
	}
	defer release(lf)
	if err := os.Remove(p.db); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return resetFailed(key, err)
	}
	if err := os.RemoveAll(p.slot); err != nil {
		return resetFailed(key, err)
	}
	return nil
}

// resetFailed is the error of Reset when the files of the quota key
// could not be opened, locked or removed (a read-only file system, no
// permission, something at their names that is not a file): the store
// failed, not the caller.
func resetFailed(key string, err error) error {
	if errors.Is(err, throttle.ErrBackend) {
		return fmt.Errorf("localstore: reset quota %q: %w", key, err)
	}
	return fmt.Errorf("localstore: reset quota %q: %w: %w", key, throttle.ErrBackend, err)
}
