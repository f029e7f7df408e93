package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/pace-cli/pace/internal/redact"
	"github.com/pace-cli/pace/internal/termbar"
)

// IOStreams bundles pace's standard streams with what is known about
// them: whether stdin, stdout and stderr are terminals, and how wide
// stderr's terminal is. Make it with System or Test; the TTY answers
// and the width can be overridden.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY, stdoutTTY, stderrTTY bool
	// stdoutPipe: stdout is a pipe or a socket, whose reader may write
	// what it reads to stderr's terminal (| jq, | tee log, | less).
	stdoutPipe bool
	// dumb: TERM is dumb or unset, a terminal that knows no escape
	// sequences (Emacs' shell, a bare console).
	dumb bool
	// width returns the columns of stderr's terminal, 0 if unknown.
	width func() int
	// resizes, if set, relays the terminal's resizes to a channel as
	// signal.Notify does (signal.Stop ends it).
	resizes func(chan<- os.Signal)
	// foreground, if set, reports whether pace is in the foreground of
	// stderr's terminal.
	foreground func() bool
	// secrets hides, in pace's own messages (sayf), the credentials of
	// pace's arguments (execute sets it: redact.ForArgs) and of any URL;
	// nil hides any URL's.
	secrets *redact.Redactor
}

// System returns the process's standard streams.
func System() *IOStreams {
	return &IOStreams{
		In:         os.Stdin,
		Out:        os.Stdout,
		ErrOut:     os.Stderr,
		stdinTTY:   isTerminal(os.Stdin),
		stdoutTTY:  isTerminal(os.Stdout),
		stderrTTY:  isTerminal(os.Stderr),
		stdoutPipe: isPipe(os.Stdout),
		dumb:       os.Getenv("TERM") == "dumb" || os.Getenv("TERM") == "",
		width: func() int {
			w, _, err := term.GetSize(int(os.Stderr.Fd()))
			if err != nil {
				return 0
			}
			return w
		},
		resizes:    termbar.NotifyResize,
		foreground: func() bool { return termbar.InForeground(os.Stderr.Fd()) },
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

// IsStdoutTTY reports whether stdout is a terminal: job output then
// shares the screen with the progress bar.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// SetStdoutTTY overrides IsStdoutTTY.
func (s *IOStreams) SetStdoutTTY(tty bool) { s.stdoutTTY = tty }

// TerminalWidth returns the columns of stderr's terminal now, read again
// at each call so that a resized window is followed; 80 when unknown.
func (s *IOStreams) TerminalWidth() int {
	if s.width != nil {
		if w := s.width(); w > 0 {
			return w
		}
	}
	return defaultTerminalWidth
}

// SetTerminalWidth overrides TerminalWidth with a fixed width.
func (s *IOStreams) SetTerminalWidth(w int) { s.width = func() int { return w } }

// NotifyResize relays the resizes of stderr's terminal (SIGWINCH) to c,
// as signal.Notify relays signals; signal.Stop(c) ends it. Test streams
// tell of none.
func (s *IOStreams) NotifyResize(c chan<- os.Signal) {
	if s.resizes != nil {
		s.resizes(c)
	}
}

// SetResizes overrides NotifyResize: notify is given the channel.
func (s *IOStreams) SetResizes(notify func(chan<- os.Signal)) { s.resizes = notify }

// IsForeground reports whether pace's process group is the foreground
// group of stderr's terminal (or stderr is no terminal): the bar is drawn
// only then, not over the shell's prompt when pace runs in the
// background. Test streams are in the foreground.
func (s *IOStreams) IsForeground() bool { return s.foreground == nil || s.foreground() }

// SetForeground overrides IsForeground.
func (s *IOStreams) SetForeground(fg func() bool) { s.foreground = fg }

// defaultTerminalWidth is the width assumed when the terminal does not
// tell its own.
const defaultTerminalWidth = 80

// IsStdoutPipe reports whether stdout is a pipe or a socket: its reader
// may write job output to the terminal behind pace's back.
func (s *IOStreams) IsStdoutPipe() bool { return s.stdoutPipe }

// SetStdoutPipe overrides IsStdoutPipe.
func (s *IOStreams) SetStdoutPipe(pipe bool) { s.stdoutPipe = pipe }

// IsStderrTTY reports whether stderr is a terminal: `--progress auto`
// draws a bar only then.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// SetStderrTTY overrides IsStderrTTY.
func (s *IOStreams) SetStderrTTY(tty bool) { s.stderrTTY = tty }

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

func isPipe(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0
}

// sameFile reports whether writes to a and b reach the same file (pace
// run > log 2>&1, a pipe both go into, one terminal): either is the
// other, or both are files with one identity.
func sameFile(a, b io.Writer) bool {
	if a == b {
		return true
	}
	fa, ok := a.(*os.File)
	fb, ok2 := b.(*os.File)
	if !ok || !ok2 {
		return false
	}
	sa, err := fa.Stat()
	if err != nil {
		return false
	}
	sb, err := fb.Stat()
	return err == nil && os.SameFile(sa, sb)
}

// sayf prints "pace: message" on stderr with the credentials of pace's
// arguments, and of any URL, hidden wherever the message quotes them: an
// error quotes the path it could not open, and a URL given where a file
// goes (-a, ::::, --joblog, -o, --summary-file) is such a path, its
// password shown whole or cleaned (https:/user:pw@host).
func (s *IOStreams) sayf(format string, args ...any) {
	fmt.Fprintf(s.ErrOut, "pace: %s\n", s.shown(fmt.Sprintf(format, args...)))
}

// shown returns msg, a message of pace's own, with the credentials of
// pace's arguments and of any URL hidden, as sayf prints it.
func (s *IOStreams) shown(msg string) string { return s.secrets.String(msg) }
