//go:build !linux

package rawconn

import "net"

// Acked reports false: elsewhere than on Linux pace does not look.
func Acked(net.Conn) (uint64, bool) { return 0, false }
