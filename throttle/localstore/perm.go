package localstore

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pace-cli/pace/throttle"
)

// The store's files are its user's alone (0600, directories 0700),
// unless the directory they are made in lets its group write: a state
// directory shared by a group (chgrp team DIR; chmod 2770 DIR, the setgid
// bit giving new files the directory's group) makes every file the store
// creates there the group's to read and write too (0660, directories
// 0770), whatever the umask, so that one quota holds for every member's
// pace. Nothing is ever made the world's.
//
// Any member of such a group can put a file of its own making at a
// store's name: a symbolic link to another user's file, or a FIFO. So
// the store opens its files with openFile, which never follows a link
// at the name (O_NOFOLLOW), never waits in open (O_NONBLOCK: a FIFO) and
// refuses anything but a regular file, and it changes the permission of
// an open file (fchmod), never of a path, and only of one this user owns.

// permIn returns the permission of a file the store creates in dir, and
// of a directory it creates there.
func permIn(dir string) (file, subdir os.FileMode) {
	st, err := os.Stat(dir)
	if err != nil {
		return permFor(0)
	}
	return permFor(st.Mode())
}

// permFor is permIn for a directory of mode dir: the group's if the
// group may write in it, else the user's alone.
func permFor(dir os.FileMode) (file, subdir os.FileMode) {
	if dir.Perm()&0o020 != 0 {
		return 0o660, 0o770
	}
	return 0o600, 0o700
}

// openFile opens path as os.OpenFile does, but only if it is a regular
// file: a symbolic link at path is not followed, and a FIFO, a device or
// a directory is refused, with an error wrapping throttle.ErrBackend that
// names path. It is bbolt's Options.OpenFile for the store file.
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	if err := refuseLink(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, flag|openFlags, perm)
	if err != nil {
		// O_NOFOLLOW fails with ELOOP on a link (EMLINK or EFTYPE on
		// some BSDs), O_RDWR with EISDIR on a directory: say what is
		// there instead.
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
			return nil, notAFile(path, fi.Mode())
		}
		return nil, err
	}
	if err := regular(f, path); err != nil {
		return nil, err
	}
	// O_NONBLOCK means nothing for a regular file's reads, writes and
	// locks.
	return f, nil
}

// regular returns nil if f, opened at path, is a regular file; else it
// closes f and says what is there.
func regular(f *os.File, path string) error {
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = notAFile(path, fi.Mode())
	}
	if err != nil {
		_ = f.Close()
	}
	return err
}

// notAFile is the error for something at a store file's name that is
// not a regular file. Like a damaged store, it is left as it is.
func notAFile(path string, mode fs.FileMode) error {
	what := "not a regular file"
	switch {
	case mode&fs.ModeSymlink != 0:
		what = "a symbolic link"
	case mode&fs.ModeNamedPipe != 0:
		what = "a FIFO"
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	}
	return &storeError{fmt.Errorf("localstore: %s is %s, not a file pace made; move it away: %w", path, what, throttle.ErrBackend)}
}

// openShared opens path as openFile does, creating it with the
// permission permIn gives for its directory.
func openShared(path string, flag int) (*os.File, error) {
	perm, _ := permIn(filepath.Dir(path))
	f, err := openFile(path, flag, perm)
	if err == nil {
		sharePerm(f, perm)
	}
	return f, err
}

// sharePerm gives the open file f the group's bits of perm that the umask
// took away when it was created (x too, for a directory the group must
// enter), and takes away what perm does not give:
// the world's bits always, the group's for a private perm (a file made
// before pace opened it, such as an empty one touched in the directory,
// kept its own mode). It changes only a file or directory this user owns
// (and a file with no other link: not another file linked into the state
// directory); a failure leaves the file as it was (a quota not shared,
// never a quota broken).
func sharePerm(f *os.File, perm os.FileMode) {
	fi, err := f.Stat()
	if err != nil || !ownedAlone(fi) {
		return
	}
	have := fi.Mode().Perm()
	want := have&^0o007 | perm&0o070 // a directory's group needs x to enter it
	if perm&0o070 == 0 {
		want &^= 0o070
	}
	if want != have {
		_ = f.Chmod(fi.Mode()&(os.ModeSetgid|os.ModeSetuid|os.ModeSticky) | want)
	}
}

// mkdirShared makes the directory path (and its parents) as os.MkdirAll
// does, with the permission permIn gives for its parent. A link or
// anything else but a directory at path is refused, as openFile does.
func mkdirShared(path string) error {
	_, perm := permIn(filepath.Dir(path))
	if err := os.MkdirAll(path, perm); err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.IsDir() {
			return notAFile(path, fi.Mode())
		}
		return err
	}
	if err := refuseLink(path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.IsDir() {
			return notAFile(path, fi.Mode())
		}
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return notAFile(path, fi.Mode())
	}
	sharePerm(f, perm)
	return nil
}
