//go:build unix

package cmd

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestStateGroupShared: a state directory its group may write (chmod
// 2770, chgrp team) shares its quotas with the group: every file and
// directory the store creates there is the group's to read and write,
// whatever the umask; a private directory keeps them private (0600), and
// nothing is ever the world's.
func TestStateGroupShared(t *testing.T) {
	for _, tt := range []struct {
		dirMode os.FileMode
		want    os.FileMode // the permission of every file created
	}{
		{0o770 | os.ModeSetgid, 0o660},
		{0o700, 0o600},
		{0o777, 0o660}, // the world's directory: the group's files, never the world's
	} {
		dir := filepath.Join(t.TempDir(), "state")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, tt.dirMode); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := execPace(t, "", "exec", "--key", "g", "--state", dir, "-r", "5/s", "--global-jobs", "2", "--", "true"); code != 0 {
			t.Fatalf("pace exec = %d, %q", code, stderr)
		}
		n := 0
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || path == dir {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			want := tt.want
			if d.IsDir() {
				want |= want >> 1 & 0o110 // search bits with read: 0770 or 0700
			}
			if fi.Mode().Perm() != want {
				t.Errorf("in a %v state directory, %s is %v, want %v", tt.dirMode, filepath.Base(path), fi.Mode().Perm(), want)
			}
			n++
			return nil
		})
		if n < 4 { // g.db, g.lock, g.open, g.slots/ and its slot file
			t.Errorf("in a %v state directory the store made %d files, want at least 4", tt.dirMode, n)
		}
	}
}
