//go:build !unix

package joblog

import "os"

// lock takes no lock where pace takes no file locks: appends are still
// whole rows.
func lock(*os.File) bool { return false }

// unlock does nothing.
func unlock(*os.File) {}
