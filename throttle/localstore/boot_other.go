//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package localstore

// readBootID returns "": this system's boots are not told apart, and a
// store is not recovered after a crash of the host (see crash.go).
func readBootID() string { return "" }
