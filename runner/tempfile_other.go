//go:build !linux

package runner

import "os"

// openUnnamed returns nil: only Linux makes files without a name.
func openUnnamed(string) *os.File { return nil }
