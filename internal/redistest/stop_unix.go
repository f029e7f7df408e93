//go:build unix

package redistest

import "syscall"

// Stop stops the server's process (SIGSTOP) and closes nothing: it keeps
// its connections, the kernel still accepts new ones into its backlog, and
// nothing is answered until Continue, as with a Redis behind a link that
// has gone silent. Kill, and the end of the test, still end it. It is a
// no-op if the server is not running.
func (s *Server) Stop() { s.signal(syscall.SIGSTOP) }

// Continue lets a stopped server go on (SIGCONT): it then answers what it
// was sent meanwhile. It is a no-op if the server is not running.
func (s *Server) Continue() { s.signal(syscall.SIGCONT) }
