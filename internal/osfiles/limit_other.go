//go:build !unix

package osfiles

// RaiseLimit does nothing where there is no such limit to raise.
func RaiseLimit() {}

// Limit reports no limit on open files.
func Limit() (int, bool) { return 0, false }
