// Package foreground runs one command in the foreground, as a shell
// would: pace exec's command, and pace proxy's -- CMD. It finds the
// command as a shell does (with a shell's exit status when it cannot
// start), ties it to pace's life (Linux: Pdeathsig), sends it the signals
// pace receives meanwhile, and returns its exit status as a shell gives
// it.
package foreground

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
)

// Look finds name as a shell would, and says, as a shell's exit status,
// why it cannot run: 127 not found, 126 found but not executable.
func Look(name string) (path string, code int, err error) {
	p, err := exec.LookPath(name)
	if err == nil {
		return p, 0, nil
	}
	return "", StartExitCode(err), StartError(name, err)
}

// StartExitCode is the shell's exit status for a command that could not
// start because of err: 127 when it does not exist, else 126.
func StartExitCode(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return 127
	}
	return 126
}

// StartError says, for a user, why the command name could not start.
func StartError(name string, err error) error {
	switch {
	case errors.Is(err, exec.ErrDot):
		return fmt.Errorf("%s: found only in the current directory through $PATH; run it as ./%s", name, name)
	case errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist):
		if why := MissingPart(err); why != "" {
			return fmt.Errorf("%s: cannot execute: %s", name, why)
		}
		return fmt.Errorf("%s: command not found", name)
	case errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("%s: is a directory", name)
	case errors.Is(err, fs.ErrPermission):
		if fi, serr := os.Stat(name); serr == nil && fi.IsDir() {
			return fmt.Errorf("%s: is a directory", name)
		}
		return fmt.Errorf("%s: permission denied (not executable)", name)
	case errors.Is(err, syscall.ENOEXEC):
		return fmt.Errorf("%s: cannot execute: not a program this system runs (a script needs a first line such as #!/bin/sh)", name)
	}
	// The innermost error, without the file name again.
	for {
		u := errors.Unwrap(err)
		if u == nil {
			break
		}
		err = u
	}
	return fmt.Errorf("%s: cannot execute: %v", name, err)
}

// MissingPart says what was not found when the program of a start
// that failed with err (not found) exists: the interpreter its #! line
// names, or (a program) its loader. It returns "" if the program itself
// is missing.
func MissingPart(err error) string {
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path == "" {
		return ""
	}
	f, oerr := os.Open(pe.Path)
	if oerr != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 256)
	n, _ := f.Read(b)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	if rest, ok := strings.CutPrefix(line, "#!"); ok {
		if interp := strings.Fields(rest); len(interp) > 0 {
			return fmt.Sprintf("its interpreter %s (its #! line) was not found", interp[0])
		}
	}
	return "a file it needs was not found (its interpreter, or the loader a program names)"
}

// IsDir reports whether name is a directory.
func IsDir(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && fi.IsDir()
}

// CheckInterpreter returns an error when path, where the command name was
// found, is a script whose #! line names an interpreter that does not
// exist, so that starting it must fail (`command "./x.py" cannot run: its
// interpreter /usr/bin/python9 (its #! line) was not found`); else nil.
func CheckInterpreter(name, path string) error {
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return nil // not ours to tell (and a FIFO would block the open)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil // not ours to tell: starting it will say
	}
	defer f.Close()
	b := make([]byte, 256)
	n, _ := f.Read(b)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	interp := strings.Fields(rest)
	if !ok || len(interp) == 0 {
		return nil
	}
	if _, err := os.Stat(interp[0]); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("command %q cannot run: its interpreter %s (its #! line) was not found", name, interp[0])
}

// Command is a command to run in the foreground.
type Command struct {
	Path string   // found (Look)
	Argv []string // Argv[0] is its name
	Env  []string // nil: pace's
	// Its standard streams: pace's own.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Signals delivers the signals pace's caller catches (SIGINT and
	// SIGTERM): they are sent on to the command.
	Signals <-chan os.Signal
	// ExtraFiles are inherited by the command as descriptors 3 and up.
	ExtraFiles []*os.File
	// Last says that the process exits once Run returns: the signals
	// caught for the command stay caught (each signal.Stop is a round
	// trip to the runtime's signal thread).
	Last bool
}

// Run runs c, sending it the signals pace receives meanwhile (those on
// c.Signals, and those a shell leaves to its command: forwarded), and
// returns its exit status as a shell gives it, and the signal that killed
// it (nil if it exited). What goes wrong is said on c.Stderr.
func Run(c Command) (code int, killedBy os.Signal) {
	cmd := &exec.Cmd{Path: c.Path, Args: c.Argv, Env: c.Env, Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr,
		ExtraFiles: c.ExtraFiles}
	// The thread that starts the command lives until it has exited (see
	// dieWithPace).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dieWithPace(cmd)
	// The signals a shell leaves to its command (HUP, USR1, QUIT...) are
	// caught from before the start, so that none kills pace (and with it
	// the command, without its traps) or is lost.
	more := make(chan os.Signal, 8)
	notifyForwarded(more)
	if !c.Last {
		defer signal.Stop(more)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(c.Stderr, "pace: %v\n", StartError(c.Argv[0], err))
		return StartExitCode(err), nil
	}
	done := make(chan struct{})
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for {
			select {
			case sig := <-c.Signals:
				forwardSignal(cmd.Process, sig)
			case sig := <-more:
				forwardSignal(cmd.Process, sig)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-forwarded
	if cmd.ProcessState == nil { // copying a stream failed before the exit was known
		fmt.Fprintf(c.Stderr, "pace: %s: %v\n", c.Argv[0], err)
		return 1, nil
	}
	return exitStatus(cmd.ProcessState)
}
