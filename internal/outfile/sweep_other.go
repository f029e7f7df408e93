//go:build !unix

package outfile

import "os"

// openLeftover opens what may be a temporary file left behind, for
// reading.
func openLeftover(path string) (*os.File, error) { return os.Open(path) }
