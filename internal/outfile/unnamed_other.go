//go:build !linux

package outfile

import (
	"errors"
	"os"
)

// openUnnamed returns nil: only Linux makes files without a name
// (O_TMPFILE), and the caller creates a named temporary file instead.
func openUnnamed(dir string) *os.File { return nil }

// linkUnnamed is never called where openUnnamed makes no file.
func linkUnnamed(f *os.File, name string) error { return errors.ErrUnsupported }
