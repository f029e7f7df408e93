//go:build !linux

package rawconn

import "net"

// HungUp reports false: elsewhere than on Linux pace does not look.
func HungUp(net.Conn) bool { return false }
