package command

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// RunReaper is the reaper's process: it ignores the signals that stop
// pace (it must outlive pace, and is not a job), takes a name that is not
// pace's where it can (Linux: `killall -9 pace` and `pkill -9 pace` then
// spare it), and Reaps in.
func RunReaper(in io.Reader) error {
	signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	os.WriteFile("/proc/self/comm", []byte("reaper"), 0)
	return Reap(in)
}

// Reap is the reaper's work (Executor.Reaper): it reads the lines pace
// writes on in (see reaper) until in ends (pace exited, or died), then
// sends SIGKILL to the process group of each job that has not ended
// (Unix; elsewhere there are no groups, and it only reads), and on Linux
// to each process whose environment holds the JobEnv value of a job that
// has not ended, found in /proc: the ones a job started before pace could
// tell its group, and the ones that left the group, but not those whose
// job has ended. It kills those processes one by one, not their groups (a
// job's child may have joined a group that is not the job's, as the
// user's shell's), and looks again for what they started meanwhile, up to
// sweepRounds times. It returns once it has.
func Reap(in io.Reader) error {
	return reap(in, killPgid, sysProcs())
}

// reap is Reap with the kill of a group, and the processes to look
// through for JobEnv values, none if ps is nil.
func reap(in io.Reader, kill func(pgid int), ps procs) error {
	l, err := readLeft(in)
	for _, pgid := range l.groups {
		kill(pgid)
	}
	if ps != nil && len(l.marks) > 0 {
		sweep(l.marks, ps)
	}
	return err
}

// left is what the jobs that have not ended left to the reaper.
type left struct {
	groups []int           // their process groups, each once
	marks  map[string]bool // their JobEnv entries, "PACE_JOB=TOKEN.N"
}

// readLeft reads pace's lines until in ends, and returns what the jobs
// not ended then left: the groups of those whose group it was told, and
// the JobEnv entries of all. A group is never 0 (the reaper's own) or 1
// and below (kill(-1) is every process the user has). Lines it does not
// know are skipped.
func readLeft(in io.Reader) (left, error) {
	var token string
	jobs := map[uint64]int{} // by start: its group, 0 while not told
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		if line[0] == '@' {
			token = line[1:]
			continue
		}
		num, pg, _ := strings.Cut(line[1:], " ")
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			continue
		}
		switch line[0] {
		case '+':
			jobs[n] = 0
		case '=':
			if pgid, err := strconv.Atoi(pg); err == nil && pgid > 1 {
				jobs[n] = pgid
			}
		case '-':
			delete(jobs, n)
		}
	}
	var l left
	seen := map[int]bool{}
	for n, pgid := range jobs {
		if pgid > 1 && !seen[pgid] {
			seen[pgid] = true
			l.groups = append(l.groups, pgid)
		}
		if token != "" {
			if l.marks == nil {
				l.marks = map[string]bool{}
			}
			l.marks[jobMark(token, n)] = true
		}
	}
	return l, sc.Err()
}

// procs is what the reaper sees of the processes there are, to find
// those whose environment holds a JobEnv entry: /proc on Linux
// (sysProcs), a fake in tests.
type procs interface {
	// list returns the ids of the processes there are now.
	list() []int
	// environ returns the environment process pid was started with, as
	// entries each ended by a NUL byte, or nil if it cannot be read.
	environ(pid int) []byte
	// execing reports whether process pid, whose environment read as
	// empty, may be in the middle of an execve: Linux shows a process's
	// environment, and its command line, as empty from the moment its new
	// program's memory is in place until the kernel has written the
	// program's arguments and environment to it, a moment that lasts as
	// long as the process waits for a CPU. A zombie, a kernel thread, or
	// a process whose command line reads (one started with an empty
	// environment) is not execing.
	execing(pid int) bool
	// kill sends SIGKILL to process pid if marked(its environment) holds,
	// and reports whether it did. It never kills another process that
	// took pid after the one marked ended.
	kill(pid int, marked func(environ []byte) bool) bool
	// wait waits a moment for the processes killed to end, so that the
	// next list does not show them.
	wait()
	// pause waits before the processes caught execing are read again:
	// longer for each round already waited (0, 1, ...), as a process in
	// its execve on a loaded machine may wait a while for a CPU.
	pause(round int)
}

// sweepRounds bounds how many times the reaper looks through the
// processes: each look kills those it finds, and the next finds what they
// started meanwhile, if any; or it reads again the processes it caught
// in an execve.
const sweepRounds = 10

// sweep kills the processes of ps whose environment holds one of marks,
// looking again while a look finds any, up to sweepRounds times. A
// process caught in an execve (its environment reads as empty for that
// moment: a job's child that left its group with setsid, as setsid execs
// the command) is read again after a pause, and only it, if a look found
// nothing else: a look that took it for unmarked let it run on after
// pace.
func sweep(marks map[string]bool, ps procs) {
	marked := func(environ []byte) bool {
		for len(environ) > 0 {
			kv := environ
			if i := bytes.IndexByte(environ, 0); i >= 0 {
				kv, environ = environ[:i], environ[i+1:]
			} else {
				environ = nil
			}
			if marks[string(kv)] {
				return true
			}
		}
		return false
	}
	var pids []int
	list, pauses := true, 0
	for range sweepRounds {
		if list {
			pids = ps.list()
		}
		found := false
		var again []int // caught in an execve, or marked but not killed
		for _, pid := range pids {
			env := ps.environ(pid)
			switch {
			case marked(env):
				if ps.kill(pid, marked) {
					found = true
				} else {
					// Read again: its second reading may have come
					// during an execve; if it ended or its pid was
					// taken, the next reading says so.
					again = append(again, pid)
				}
			case len(env) == 0 && ps.execing(pid):
				again = append(again, pid)
			}
		}
		switch {
		case found:
			ps.wait()
			list = true
		case len(again) > 0:
			ps.pause(pauses)
			pauses++
			list, pids = false, again
		default:
			return
		}
	}
}

// sweeps runs the looks through the processes for the jobs that pace
// kills itself (Executor.Execute, Linux): an interrupt kills every
// running job at once, and one look serves all the jobs waiting for one
// when it starts, instead of a look through every process for each.
type sweeps struct {
	mu      sync.Mutex
	marks   map[string]bool // the next look's JobEnv entries
	done    chan struct{}   // closed when the next look has ended
	looking bool
}

// sweep kills, through ps, the processes whose environment holds mark,
// with those of the other jobs asking meanwhile, and returns once a look
// that started after it asked has ended.
func (s *sweeps) sweep(mark string, ps procs) {
	s.mu.Lock()
	if s.marks == nil {
		s.marks, s.done = map[string]bool{}, make(chan struct{})
	}
	s.marks[mark] = true
	done := s.done
	if !s.looking {
		s.looking = true
		go s.look(ps)
	}
	s.mu.Unlock()
	<-done
}

// look sweeps for the marks asked for, again while more are asked for
// during a look.
func (s *sweeps) look(ps procs) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.marks != nil {
		marks, done := s.marks, s.done
		s.marks, s.done = nil, nil
		s.mu.Unlock()
		sweep(marks, ps)
		close(done)
		s.mu.Lock()
	}
	s.looking = false
}
