package localstore

import (
	"os"
	"strings"
)

// readBootID returns the id of the host's current boot: the kernel's
// random boot_id, new at every boot; "" if it cannot be read.
func readBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
