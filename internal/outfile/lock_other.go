//go:build !unix || solaris || aix

package outfile

import (
	"errors"
	"os"
)

// renameOpen says whether a file may be renamed while it is open: not on
// Windows, where Go opens files without FILE_SHARE_DELETE.
const renameOpen = false

// tryLock takes no lock here: temporary files are left unlocked, and
// Sweep removes none.
func tryLock(f *os.File) (bool, error) { return false, errors.ErrUnsupported }
