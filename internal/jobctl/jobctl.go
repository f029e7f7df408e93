// Package jobctl stops a run's jobs with pace when the terminal stops pace
// (Ctrl-Z), and continues them with it (fg, bg). Each job runs in a
// process group of its own, so that Ctrl-C reaches pace alone; the
// terminal's SIGTSTP then never reaches the jobs either, and they ran on
// while pace was stopped.
package jobctl

import "os"

// Follow catches SIGTSTP until the returned function is called. On it,
// around runs the stop: signal sends SIGSTOP to every running job, pace
// stops itself as the terminal asked, and once continued it sends them
// SIGCONT. around is where the caller hides what it draws while stopped
// (a progress bar: erase, run, draw again). Where SIGTSTP is ignored (a
// shell without job control), or the system has no job control, Follow
// does nothing.
func Follow(signal func(os.Signal), around func(func())) (stop func()) {
	return follow(signal, around)
}
