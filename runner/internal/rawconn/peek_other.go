//go:build !unix

package rawconn

import "net"

// Closed reports false: elsewhere than on Unix pace does not look.
func Closed(net.Conn) bool { return false }
