//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package localstore

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// readBootID returns an id of the host's current boot: the instant it
// booted (kern.boottime), to the microsecond; "" if it cannot be read.
func readBootID() string {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return ""
	}
	return "boottime:" + strconv.FormatInt(tv.Nano()/1000, 10)
}
