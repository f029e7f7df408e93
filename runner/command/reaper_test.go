package command

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestReapKillsOnlyGroups: what is not a line of pace's, or names no
// group a kill may reach safely (0 is the reaper's own group, -1 every
// process of the user's), kills nothing.
func TestReapKillsOnlyGroups(t *testing.T) {
	var killed []int
	in := "+1\n=1 12\n+2\n=2 0\n+3\n=3 1\n+4\n=4 -1\n-\n+\n=\nnoise\n+x\n=5 x\n+6\n=6 13\n-6\n-99\n=99\n"
	if err := reap(strings.NewReader(in), func(pgid int) { killed = append(killed, pgid) }, nil); err != nil {
		t.Fatalf("reap = %v", err)
	}
	if want := []int{12}; !slices.Equal(killed, want) {
		t.Errorf("reap killed groups %v, want %v", killed, want)
	}
}

// fakeProcs is a table of processes for the reaper to look through,
// with what it did to them.
type fakeProcs struct {
	env    map[int]string // by pid, the environ; a process without one cannot be read
	forks  map[int]int    // by pid, the pid of a child it starts just before it is killed
	execs  map[int][]int  // by pid, the readings of its environ (1, 2, ...) that come during an execve
	reads  map[int]int    // by pid, how many times its environ was read
	log    *[]string      // what was killed, in order
	looks  int            // how many times the processes were listed
	waited int            // how many times it waited for those killed
	paused []int          // the rounds of each pause, in order
}

func (f *fakeProcs) list() []int {
	f.looks++
	return slices.Sorted(maps.Keys(f.env))
}

func (f *fakeProcs) environ(pid int) []byte {
	if f.reads == nil {
		f.reads = map[int]int{}
	}
	f.reads[pid]++
	if slices.Contains(f.execs[pid], f.reads[pid]) {
		return nil // between its new program's memory and its environment
	}
	if env, ok := f.env[pid]; ok && env != "" {
		return []byte(env)
	}
	return nil
}

func (f *fakeProcs) kill(pid int, marked func([]byte) bool) bool {
	if !marked(f.environ(pid)) {
		return false
	}
	*f.log = append(*f.log, fmt.Sprint("pid ", pid))
	if child, ok := f.forks[pid]; ok {
		f.env[child] = f.env[pid]
	}
	delete(f.env, pid)
	return true
}

func (f *fakeProcs) execing(pid int) bool {
	_, ok := f.env[pid]
	return ok && slices.Contains(f.execs[pid], f.reads[pid])
}

func (f *fakeProcs) wait() { f.waited++ }

func (f *fakeProcs) pause(round int) { f.paused = append(f.paused, round) }

// TestReapStartsNotTold: when its input ends, the reaper kills the groups
// of the jobs that have not ended, then each process whose environment
// holds the JobEnv entry of a job not ended, its group told or not (pace
// died between the job's fork and telling its group, or the process left
// the group), and looks again for the children they started meanwhile. It
// spares what holds an ended job's entry, or one that only looks like a
// running job's.
func TestReapStartsNotTold(t *testing.T) {
	in := strings.Join([]string{
		"@tok",
		"+1", "=1 500", // running
		"+2",                 // about to start: pace died before telling its group
		"+3", "=3 501", "-3", // ended
		"+4", "-4", // not started
		"+5", "=5 500", "-5", // ended, its group a running job's too
		"+6", "=6 502", // running, its group told
	}, "\n") + "\n"
	var log []string
	ps := &fakeProcs{
		env: map[int]string{
			10: "A=1\x00PACE_JOB=tok.1\x00",    // job 1's, left its group
			20: "PACE_JOB=tok.2\x00B=2\x00",    // job 2's
			21: "PACE_JOB=tok.2",               // its child, whose environ ends without a NUL
			30: "PACE_JOB=tok.3\x00",           // left by job 3, which ended
			40: "PACE_JOB=tok.12\x00",          // looks like job 1's
			41: "PACE_JOB=other.1\x00",         // another pace's job 1
			42: "XPACE_JOB=tok.1\x00",          // not JobEnv
			43: "A=PACE_JOB=tok.1\x00",         // not JobEnv either
			44: "",                             // cannot be read
			60: "PACE_JOB=tok.6\x00PACE_JOB=x", // job 6's, in its group too
		},
		forks: map[int]int{20: 22, 22: 23}, // job 2's starts a child as it is killed, which does too
		log:   &log,
	}
	if err := reap(strings.NewReader(in), func(pgid int) { log = append(log, fmt.Sprint("group ", pgid)) }, ps); err != nil {
		t.Fatalf("reap = %v", err)
	}
	groups, pids := log[:2], log[2:]
	slices.Sort(groups)
	if want := []string{"group 500", "group 502"}; !slices.Equal(groups, want) {
		t.Errorf("reap killed first %q, want the running jobs' groups %q", groups, want)
	}
	slices.Sort(pids)
	if want := []string{"pid 10", "pid 20", "pid 21", "pid 22", "pid 23", "pid 60"}; !slices.Equal(pids, want) {
		t.Errorf("reap killed then %q, want %q", pids, want)
	}
	// Three looks kill 10, 20, 21, 60, then 22, then 23; a fourth finds none.
	if ps.looks != 4 || ps.waited != 3 {
		t.Errorf("reap looked through the processes %d times and waited %d, want 4 and 3", ps.looks, ps.waited)
	}
	for _, pid := range []int{30, 40, 41, 42, 43, 44} {
		if _, ok := ps.env[pid]; !ok {
			t.Errorf("reap killed process %d", pid)
		}
	}
}

// TestReapSweepBounded: a process that starts a child each time it is
// killed (a fork bomb, as far as the reaper knows) stops the reaper's
// looks at sweepRounds, not never.
func TestReapSweepBounded(t *testing.T) {
	var log []string
	ps := &fakeProcs{env: map[int]string{100: "PACE_JOB=tok.1\x00"}, forks: map[int]int{}, log: &log}
	for pid := 100; pid < 100+2*sweepRounds; pid++ {
		ps.forks[pid] = pid + 1
	}
	if err := reap(strings.NewReader("@tok\n+1\n"), func(int) {}, ps); err != nil {
		t.Fatalf("reap = %v", err)
	}
	if ps.looks != sweepRounds || len(log) != sweepRounds {
		t.Errorf("reap looked %d times and killed %d processes, want %d and %d", ps.looks, len(log), sweepRounds, sweepRounds)
	}
}

// TestSweepReadsExecsAgain: a process read during an execve shows an
// empty environment (Linux: a job's setsid child as setsid execs the
// command, on a loaded machine for a while); the sweep reads it again,
// after a pause, instead of taking it for unmarked and ending with it
// alive. It used to: the look found nothing else and returned, and
// run_killed_setsid.txtar's setsid sleep outlived pace under load. So
// does a marked process whose second reading, the kill's, came during
// its execve. A process that reads empty and is not execing (a kernel
// thread, a zombie) is not read again.
func TestSweepReadsExecsAgain(t *testing.T) {
	var log []string
	ps := &fakeProcs{
		env: map[int]string{
			10: "PACE_JOB=tok.1\x00", // execing for its first three readings
			11: "PACE_JOB=tok.1\x00", // execing for its second: the kill's
			20: "",                   // a kernel thread
		},
		execs: map[int][]int{10: {1, 2, 3}, 11: {2}},
		log:   &log,
	}
	sweep(map[string]bool{"PACE_JOB=tok.1": true}, ps)
	slices.Sort(log)
	if want := []string{"pid 10", "pid 11"}; !slices.Equal(log, want) {
		t.Fatalf("sweep killed %q, want %q", log, want)
	}
	// Look 1 finds 10 and 11 execing: pause; 11 is killed; look 2 finds
	// 10 execing: pause; 10 is killed; look 3 finds nothing.
	if want := []int{0, 1}; ps.looks != 3 || ps.waited != 2 || !slices.Equal(ps.paused, want) {
		t.Errorf("sweep listed the processes %d times, waited %d, paused in rounds %v; want 3, 2 and %v",
			ps.looks, ps.waited, ps.paused, want)
	}
	if ps.reads[20] != ps.looks {
		t.Errorf("the kernel thread was read %d times in %d looks, want once a look: never again after a pause", ps.reads[20], ps.looks)
	}
}

// TestSweepExecingBounded: a process that reads as execing for ever is
// read again sweepRounds times, each after a longer pause, not for ever.
func TestSweepExecingBounded(t *testing.T) {
	var log []string
	ps := &fakeProcs{env: map[int]string{30: "PACE_JOB=tok.1\x00"}, execs: map[int][]int{}, log: &log}
	for i := range 2 * sweepRounds {
		ps.execs[30] = append(ps.execs[30], i+1)
	}
	sweep(map[string]bool{"PACE_JOB=tok.1": true}, ps)
	if ps.looks != 1 || len(log) != 0 || len(ps.paused) != sweepRounds || ps.paused[sweepRounds-1] != sweepRounds-1 {
		t.Errorf("sweep listed %d times, killed %v, paused in rounds %v; want once, none, 0 to %d", ps.looks, log, ps.paused, sweepRounds-1)
	}
}

// gatedProcs is fakeProcs whose first list waits until gate is closed,
// and says on listing that it has begun.
type gatedProcs struct {
	*fakeProcs
	listing chan struct{}
	gate    chan struct{}
	once    sync.Once
}

func (g *gatedProcs) list() []int {
	g.once.Do(func() { close(g.listing); <-g.gate })
	return g.fakeProcs.list()
}

// TestSweepsShareLooks: the jobs pace kills at once (an interrupt) each
// ask for a look through the processes; those asking while a look runs
// share the next one, instead of one look through every process each.
// Each job's processes are killed, and no sweep returns before a look
// that began after it asked has ended.
func TestSweepsShareLooks(t *testing.T) {
	const jobs = 20
	var log []string
	env := map[int]string{}
	for i := range jobs {
		env[100+i] = fmt.Sprintf("PACE_JOB=tok.%d\x00", i)
	}
	ps := &gatedProcs{fakeProcs: &fakeProcs{env: env, log: &log}, listing: make(chan struct{}), gate: make(chan struct{})}
	var s sweeps
	var wg sync.WaitGroup
	wg.Go(func() { s.sweep(jobMark("tok", 0), ps) })
	<-ps.listing // the first look has begun, with job 0's mark alone
	for i := 1; i < jobs; i++ {
		wg.Go(func() { s.sweep(jobMark("tok", uint64(i)), ps) })
	}
	deadline := time.Now().Add(time.Minute)
	for {
		s.mu.Lock()
		n := len(s.marks)
		s.mu.Unlock()
		if n == jobs-1 {
			break
		}
		if time.Now().After(deadline) {
			close(ps.gate)
			t.Fatalf("%d of the %d jobs asking during the first look wait for the next one, want all", n, jobs-1)
		}
		runtime.Gosched()
	}
	close(ps.gate)
	wg.Wait()
	if len(log) != jobs {
		t.Errorf("killed %v, want the %d jobs' processes", log, jobs)
	}
	// Each look lists the processes twice: once to kill, once to find
	// nothing more.
	if ps.looks != 4 {
		t.Errorf("the processes were listed %d times for %d jobs, want 4 (two looks)", ps.looks, jobs)
	}
}
