//go:build unix

package outfile

import (
	"os"
	"syscall"
)

// openLeftover opens what may be a temporary file left behind, for
// reading: never a link's target (O_NOFOLLOW), and never waiting on a
// FIFO put at its name (O_NONBLOCK).
func openLeftover(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}
