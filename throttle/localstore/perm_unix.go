//go:build unix

package localstore

import (
	"os"
	"syscall"
)

// openFlags are added to every open of a store file: no link followed at
// the name, no wait in open for a FIFO, and no descriptor left to the
// commands pace runs.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK | syscall.O_CLOEXEC

// refuseLink does nothing: O_NOFOLLOW refuses a link in open itself.
func refuseLink(string) error { return nil }

// ownedAlone reports whether fi is this user's, and, for a file, its only
// name.
func ownedAlone(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Geteuid() {
		return false
	}
	return fi.IsDir() || uint64(st.Nlink) == 1
}
