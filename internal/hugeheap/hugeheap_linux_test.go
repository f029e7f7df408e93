package hugeheap

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHeapMarked: init marked the mapping that holds start-up's heap for
// huge pages (VmFlags "hg" in /proc/self/smaps), where the host allows
// them.
func TestHeapMarked(t *testing.T) {
	if thpNever() || strings.Contains(os.Getenv("GODEBUG"), "disablethp=1") {
		t.Skip("transparent huge pages are off on this host")
	}
	if probe == nil {
		t.Fatal("init did not run")
	}
	t.Logf("MADV_COLLAPSE of the heap's region: %v", collapsed) // EINVAL before Linux 6.1
	at := uint64(uintptr(unsafe.Pointer(probe)))
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		l := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(l)[0], "-"); ok && !strings.HasSuffix(strings.Fields(l)[0], ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && a <= at && at < b
			continue
		}
		if in && strings.HasPrefix(l, "VmFlags:") {
			if !strings.Contains(l, " hg") {
				t.Errorf("the mapping of the heap at %#x is not marked for huge pages: %s", at, l)
			}
			return
		}
	}
	t.Errorf("no mapping in /proc/self/smaps holds the heap at %#x", at)
}
