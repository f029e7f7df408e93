//go:build !unix

package redistest

// Stop would stop the server's process; without SIGSTOP it skips the test.
func (s *Server) Stop() { s.t.Skip("redistest: Stop needs SIGSTOP") }

// Continue would let a stopped server go on; without SIGCONT it skips the
// test.
func (s *Server) Continue() { s.t.Skip("redistest: Continue needs SIGCONT") }
