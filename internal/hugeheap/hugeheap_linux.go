package hugeheap

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on Linux's
// architectures with 4 KB pages.
const hugePage = 2 << 20

// Size is how much heap init marks MADV_HUGEPAGE, from the start of the
// 2 MB region of its own allocation: what the runtime has mapped so far.
const Size = 2 * hugePage

// probe is init's allocation: where the heap is.
var probe *[8]byte

// collapsed is MADV_COLLAPSE's result, which tests log: 0 if it applied.
var collapsed syscall.Errno = syscall.ENOSYS

// init runs early, since it imports only syscall: most of start-up's
// heap is allocated after it. By then the runtime has touched part of
// the 2 MB region its allocations are in, so a fault there can no longer
// bring a huge page: MADV_COLLAPSE makes that region one at once
// (copying the pages already in use). The region after it is only
// marked: its first fault will.
func init() {
	if v, _ := syscall.Getenv("GODEBUG"); contains(v, "disablethp=1") || thpNever() {
		return
	}
	probe = new([8]byte)
	start := uintptr(unsafe.Pointer(probe)) &^ (hugePage - 1)
	// What the runtime has not mapped yet gives ENOMEM, and the advice
	// holds for what it has; a kernel without MADV_COLLAPSE (before
	// Linux 6.1) gives EINVAL, and start-up is as before.
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, start, Size, syscall.MADV_HUGEPAGE)
	_, _, collapsed = syscall.Syscall(syscall.SYS_MADVISE, start, hugePage, madvCollapse)
}

// madvCollapse is MADV_COLLAPSE, which package syscall does not name.
const madvCollapse = 25

// thpNever reports whether the host's administrator turned transparent
// huge pages off (MADV_COLLAPSE would not heed it).
func thpNever() bool {
	fd, err := syscall.Open("/sys/kernel/mm/transparent_hugepage/enabled", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return true // no THP in this kernel
	}
	defer syscall.Close(fd)
	var b [64]byte
	n, _ := syscall.Read(fd, b[:])
	return n <= 0 || contains(string(b[:n]), "[never]")
}

// contains is strings.Contains, which would make this package initialise
// after strings and its own imports.
func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
