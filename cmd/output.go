package cmd

import (
	"errors"
	"io"
	"sync"
	"syscall"
)

// output is pace's stdout, where job output goes. A write that fails
// fails the job whose output it was: the caller learns why. When the
// reader has gone (a pipe into head) broken reports it, once, so that pace
// starts nothing more and kills the running jobs instead of dying of
// SIGPIPE and leaving them behind; later writes are dropped. Any other
// failure (a full disk, a closed descriptor) is returned as it is. It is
// safe for concurrent use.
type output struct {
	w      io.Writer
	broken func()

	mu   sync.Mutex
	gone bool
	once sync.Once
}

// errStdoutGone is the error of a write after the reader of stdout went.
var errStdoutGone = errors.New("stdout closed by its reader")

// Write writes b to stdout.
func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	gone := o.gone
	o.mu.Unlock()
	if gone {
		return 0, errStdoutGone
	}
	n, err := o.w.Write(b)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		o.mu.Lock()
		o.gone = true
		o.mu.Unlock()
		o.once.Do(o.broken)
		return n, errStdoutGone
	}
	return n, err
}

// closed reports whether the reader of stdout has gone.
func (o *output) closed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.gone
}
