package cmd

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams bundles pace's standard streams with what is known about
// them: whether stdin and stderr are terminals. Make it with System or
// Test; the TTY answers can be overridden.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY, stderrTTY bool
}

// System returns the process's standard streams.
func System() *IOStreams {
	return &IOStreams{
		In:        os.Stdin,
		Out:       os.Stdout,
		ErrOut:    os.Stderr,
		stdinTTY:  isTerminal(os.Stdin),
		stderrTTY: isTerminal(os.Stderr),
	}
}

// Test returns streams backed by buffers, none of them a terminal, and
// the buffers: stdin, stdout, stderr.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// IsStdinTTY reports whether stdin is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// SetStdinTTY overrides IsStdinTTY.
func (s *IOStreams) SetStdinTTY(tty bool) { s.stdinTTY = tty }

// IsStderrTTY reports whether stderr is a terminal: `--progress auto`
// draws a bar only then.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetStderrTTY overrides IsStderrTTY.
func (s *IOStreams) SetStderrTTY(tty bool) { s.stderrTTY = tty }

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
