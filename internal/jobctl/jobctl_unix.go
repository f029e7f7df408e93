//go:build unix

package jobctl

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

func follow(send func(os.Signal), around func(func())) func() {
	if signal.Ignored(syscall.SIGTSTP) {
		return func() {}
	}
	c, cont := make(chan os.Signal, 1), make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTSTP)
	signal.Notify(cont, syscall.SIGCONT)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-c:
				around(func() {
					// A job being started was still in pace's process
					// group: the terminal's stop reached it before its
					// exec, and the fork waiting for that exec would keep
					// pace from stopping at all (the shell never sees a
					// stop that one thread cannot join). Continuing it
					// discards the stop, pending or taken.
					continueChildren()
					send(syscall.SIGSTOP)
					select {
					case <-cont: // an earlier one
					default:
					}
					// Stopped as the terminal asked. Not by SIGTSTP
					// again: once caught, Go's runtime keeps its handler,
					// and the signal would be dropped. (So a shell says
					// "Stopped (signal)", not "Stopped".) A stop is taken
					// by one thread and spread to the others: kill may
					// return before this one stops, so the continue is
					// waited for.
					_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
					select {
					case <-cont:
					case <-done:
					}
					send(syscall.SIGCONT)
					continueChildren() // one still starting, not a job yet
				})
			case <-done:
				return
			}
		}
	})
	return func() {
		signal.Stop(c)
		signal.Stop(cont)
		close(done)
		wg.Wait()
	}
}
