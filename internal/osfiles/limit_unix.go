//go:build unix

package osfiles

import "syscall"

// RaiseLimit raises the soft limit on open files to the hard limit, as
// far as the system allows: pace's jobs each hold a few descriptors
// (pipes, sockets, temporary files), and the soft limit is often a mere
// 1024 while the hard one is far higher.
func RaiseLimit() {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur >= l.Max {
		return
	}
	want := l
	want.Cur = l.Max
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) != nil {
		// macOS refuses more than its kern.maxfilesperproc: try less.
		for want.Cur = 1 << 20; want.Cur > l.Cur; want.Cur /= 2 {
			if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
				return
			}
		}
	}
}

// Limit returns the limit on open files, if there is one.
func Limit() (int, bool) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur > 1<<30 {
		return 0, false
	}
	return int(l.Cur), true
}
