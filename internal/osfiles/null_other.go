//go:build !unix

package osfiles

// ReopenedNull reports false where descriptors are not reused this way.
func ReopenedNull(fd int) bool { return false }
