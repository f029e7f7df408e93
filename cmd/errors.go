package cmd

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// FlagError is a usage error: a bad flag, flag value or argument. Main
// prints it with the command's usage and exits with ExitUsage.
type FlagError struct {
	err error
}

// flagErrorf returns a FlagError with a formatted message.
func flagErrorf(format string, args ...any) *FlagError {
	return &FlagError{err: fmt.Errorf(format, args...)}
}

// Error returns the message.
func (e *FlagError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error.
func (e *FlagError) Unwrap() error { return e.err }

// errSilent means the failure has already been reported; Main only exits.
var errSilent = errors.New("silent error")

// ExitError ends pace with Code; the problem has already been reported.
type ExitError struct {
	Code int
	// Signal, if not nil, is the signal pace dies of rather than exit
	// with Code (128 + its number), where it can (Main): SIGINT that
	// stopped pace exec or its command, so that a shell's loop stops too.
	Signal os.Signal
}

// Error returns "exit status N".
func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// Is makes errors.Is(err, errSilent) true: nothing more is to be printed.
func (e *ExitError) Is(target error) bool { return target == errSilent }

// libraryPrefixes are the package names that pace's libraries put at the
// start of their messages, as Go libraries do; users need none of them.
var libraryPrefixes = strings.NewReplacer("throttle: ", "", "redisrate: ", "", "localstore: ", "", "runner: ", "", "fetch: ", "",
	"pacehttp: ", "", "learn: ", "")

// userMessage returns err's message for a user: without the libraries'
// package prefixes.
func userMessage(err error) string { return libraryPrefixes.Replace(err.Error()) }
