//go:build !unix

package regfile

import "os"

// nonblock is 0 where opening a named pipe does not wait for its other
// end.
const nonblock = 0

// clearNonblock does nothing: the file was opened without O_NONBLOCK.
func clearNonblock(*os.File) error { return nil }
