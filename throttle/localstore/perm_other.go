//go:build !unix

package localstore

import (
	"io/fs"
	"os"
)

// openFlags: open has no O_NOFOLLOW here; refuseLink looks first.
const openFlags = 0

// refuseLink returns notAFile's error if path is a symbolic link (or
// another reparse point that is not a plain file or directory).
func refuseLink(path string) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
		return notAFile(path, fi.Mode())
	}
	return nil
}

// ownedAlone: the group's bits mean nothing here, and setting them
// changes no one's access.
func ownedAlone(os.FileInfo) bool { return true }
