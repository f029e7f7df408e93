//go:build !unix

package cmd

import "os"

// exitStatus returns a finished command's exit status.
func exitStatus(ps *os.ProcessState) int { return ps.ExitCode() }

// forwardSignal sends sig, which pace received, to the command p, where
// the system can. A console sends Ctrl-C to every process attached to it,
// the command included, so Windows needs nothing more.
func forwardSignal(p *os.Process, sig os.Signal) { _ = p.Signal(sig) }
