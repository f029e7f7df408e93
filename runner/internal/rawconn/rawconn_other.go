//go:build !linux

package rawconn

const supported = false

// read and write are the Linux callbacks; elsewhere Wrap makes no Conn.
func (c *Conn) read(uintptr) bool  { return true }
func (c *Conn) write(uintptr) bool { return true }
