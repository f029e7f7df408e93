package localstore

import (
	"os"
	"path/filepath"
)

// The store's files are its user's alone (0600, directories 0700),
// unless the directory they are made in lets its group write: a state
// directory shared by a group (chgrp team DIR; chmod 2770 DIR, the setgid
// bit giving new files the directory's group) makes every file the store
// creates there the group's to read and write too (0660, directories
// 0770), whatever the umask, so that one quota holds for every member's
// pace. Nothing is ever made the world's.

// permIn returns the permission of a file the store creates in dir, and
// of a directory it creates there.
func permIn(dir string) (file, subdir os.FileMode) {
	if st, err := os.Stat(dir); err == nil && st.Mode().Perm()&0o020 != 0 {
		return 0o660, 0o770
	}
	return 0o600, 0o700
}

// openShared opens path as os.OpenFile does, creating it with the
// permission permIn gives for its directory.
func openShared(path string, flag int) (*os.File, error) {
	perm, _ := permIn(filepath.Dir(path))
	f, err := os.OpenFile(path, flag, perm)
	if err == nil {
		sharePerm(path, perm)
	}
	return f, err
}

// sharePerm gives path the group's bits of perm that the umask took away
// when it was created. It changes only files this user owns and does
// nothing for private ones; a failure leaves the file as the umask made
// it (private to its user: a quota not shared, never a quota broken).
func sharePerm(path string, perm os.FileMode) {
	if perm&0o060 == 0 {
		return
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&perm != perm {
		_ = os.Chmod(path, st.Mode().Perm()|perm&0o060)
	}
}

// mkdirShared makes the directory path (and its parents) as os.MkdirAll
// does, with the permission permIn gives for its parent.
func mkdirShared(path string) error {
	_, perm := permIn(filepath.Dir(path))
	if err := os.MkdirAll(path, perm); err != nil {
		return err
	}
	sharePerm(path, perm)
	return nil
}
