//go:build !unix

package foreground

import "os"

// exitStatus returns a finished command's exit status, and no signal.
func exitStatus(ps *os.ProcessState) (int, os.Signal) { return ps.ExitCode(), nil }

// Die does nothing: the caller exits with its code.
func Die(os.Signal) {}

// notifyForwarded does nothing: SIGINT (from the Factory) is the one
// signal Windows delivers.
func notifyForwarded(chan<- os.Signal) {}

// forwardSignal sends sig, which pace received, to the command p, where
// the system can. A console sends Ctrl-C to every process attached to it,
// the command included, so Windows needs nothing more.
func forwardSignal(p *os.Process, sig os.Signal) { _ = p.Signal(sig) }
