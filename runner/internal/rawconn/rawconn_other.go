//go:build !linux

package rawconn

const supported = false
