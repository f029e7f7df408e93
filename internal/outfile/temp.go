package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// A temporary file is held locked by its writer (an exclusive flock, on
// the systems that have it) from before it has a name until it is renamed
// over its path or removed. The kernel drops the lock with the writer's
// last descriptor of the file, when the writer dies too, so a temporary
// file whose lock can be taken has no writer left: Sweep removes only
// those. On Linux a temporary file has no name at all while it is
// written (O_TMPFILE), and gets one only for the instant between being
// complete and being renamed over the file it replaces; a new file is
// linked at its path directly.

// temp is a temporary file in dir that becomes the file base there.
type temp struct {
	f         *os.File
	dir, base string
	name      string // its path; "" while it has none (O_TMPFILE)
}

// A temporary file's name is its file's, hidden, then tempMark, tempToken
// random digits and letters, and tempSuffix.
const (
	tempMark   = ".pace-"
	tempSuffix = ".part"
	tempToken  = 8
)

// tempName returns a new name for a temporary file in dir for the file
// base: ".BASE.pace-XXXXXXXX.part", hidden, saying whose it is, with base
// cut short where the whole would pass the 255 bytes a name may have.
func tempName(dir, base string) string {
	const maxBase = 255 - 1 - len(tempMark) - tempToken - len(tempSuffix)
	if len(base) > maxBase {
		cut := maxBase
		for cut > 0 && !utf8.RuneStart(base[cut]) {
			cut-- // not within a rune
		}
		base = base[:cut]
	}
	const digits = "0123456789abcdefghijklmnopqrstuvwxyz"
	var tok [tempToken]byte
	for i := range tok {
		tok[i] = digits[rand.IntN(len(digits))]
	}
	return filepath.Join(dir, "."+base+tempMark+string(tok[:])+tempSuffix)
}

// isTempName reports whether name is one that tempName gives.
func isTempName(name string) bool {
	rest, ok := strings.CutSuffix(name, tempSuffix)
	if !ok || !strings.HasPrefix(rest, ".") || len(rest) < 1+1+len(tempMark)+tempToken {
		return false
	}
	tok := rest[len(rest)-tempToken:]
	if !strings.HasSuffix(rest[:len(rest)-tempToken], tempMark) {
		return false
	}
	for i := range len(tok) {
		if c := tok[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// createTemp creates a temporary file in dir for the file base, locked.
// It asks for mode 0666, so that a new file gets the usual permissions
// under the umask.
func createTemp(dir, base string) (*temp, error) {
	if f := openUnnamed(dir); f != nil {
		return &temp{f: f, dir: dir, base: base}, nil
	}
	return createNamed(dir, base)
}

// createNamed creates a temporary file with a name in dir for the file
// base, locked where files can be.
func createNamed(dir, base string) (*temp, error) {
	for range 100 {
		name := tempName(dir, base)
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cannot create a file in %s: %w", dir, unwrapPath(err))
		}
		// Between the creation and the lock, a Sweep may take the file
		// for a leftover: it then holds the lock, or has removed the
		// file. That one is the Sweep's to remove; this writer takes
		// another name.
		locked, err := tryLock(f)
		if err == nil && (!locked || !isAt(f, name)) {
			f.Close()
			continue
		}
		// A file system without locks (err != nil) lets no Sweep take
		// one either: the file is left unlocked, and never swept.
		return &temp{f: f, dir: dir, base: base, name: name}, nil
	}
	return nil, fmt.Errorf("cannot create a file in %s: too many name collisions", dir)
}

// isAt reports whether f is the file at path name.
func isAt(f *os.File, name string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(name)
	return err == nil && os.SameFile(a, b)
}

// commit makes the temporary file the file dest: a file without a name
// is linked there when isNew (nothing was there when it was created);
// otherwise it gets a name, which is renamed over dest. The lock is held
// until the rename is done, where the system allows renaming an open
// file. On error dest is as it was, and the temporary file is still the
// caller's to remove.
func (t *temp) commit(dest string, isNew bool) error {
	if t.name == "" {
		if isNew {
			err := linkUnnamed(t.f, dest)
			if err == nil {
				t.f.Close() // synced: a close cannot lose anything now
				return nil
			}
			if !errors.Is(err, fs.ErrExist) {
				return err
			}
			// Something came at dest since: replaced, as a rename does.
		}
		if err := t.nameIt(); err != nil {
			return err
		}
	}
	if !renameOpen {
		if err := t.f.Close(); err != nil {
			return err
		}
	}
	if err := os.Rename(t.name, dest); err != nil {
		return err
	}
	t.name = ""
	t.f.Close()
	return nil
}

// nameIt links a temporary file without a name into its directory under
// a new temporary name.
func (t *temp) nameIt() error {
	for range 100 {
		name := tempName(t.dir, t.base)
		err := linkUnnamed(t.f, name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		t.name = name
		return nil
	}
	return fmt.Errorf("cannot create a file in %s: too many name collisions", t.dir)
}

// remove removes the temporary file, while it is still locked where an
// open file can be removed, and closes it.
func (t *temp) remove() error {
	if !renameOpen {
		t.f.Close() // Windows removes no open file
	}
	var err error
	if t.name != "" {
		err = os.Remove(t.name)
		t.name = ""
	}
	t.f.Close()
	return err
}
