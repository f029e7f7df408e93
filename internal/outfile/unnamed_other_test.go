//go:build !linux

package outfile

// canOpenUnnamed reports false: only Linux makes files without a name.
func canOpenUnnamed(dir string) bool { return false }
