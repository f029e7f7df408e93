package cmd

import (
	"errors"
	"io"
	"sync"
	"syscall"
)

// pipeWatch passes writes to w until one fails because the reader has
// gone (stdout piped into `head`, say). It then calls broken, once, so
// that pace starts nothing more and kills the running jobs instead of
// dying of SIGPIPE and leaving them behind; later writes are dropped.
type pipeWatch struct {
	w      io.Writer
	broken func()

	once sync.Once
	mu   sync.Mutex
	gone bool
}

func (p *pipeWatch) Write(b []byte) (int, error) {
	p.mu.Lock()
	gone := p.gone
	p.mu.Unlock()
	if gone {
		return len(b), nil
	}
	n, err := p.w.Write(b)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		p.mu.Lock()
		p.gone = true
		p.mu.Unlock()
		p.once.Do(p.broken)
		return len(b), nil
	}
	return n, err
}

// closed reports whether the reader has gone.
func (p *pipeWatch) closed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gone
}
