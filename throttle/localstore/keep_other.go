//go:build !linux

package localstore

// keepOpen: see keep_linux.go.
const keepOpen = false
