//go:build unix

package localstore_test

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/localstore"
)

// Tests with real processes: the test binary runs again as children
// (TestChild) that share a quota through a store in a temporary
// directory. They use real time, and check every admission the children
// report with the independent oracle throttle.Check.

// childEnv configures a child.
type childEnv struct {
	mode         string // admit, hold or bench
	dir, key     string
	rules        string
	counterAbove int
	globalJobs   int
	n            int     // admissions; 0: until killed
	maxCost      int     // costs are drawn from 1..maxCost
	killInTx     float64 // chance that an admission's transaction kills its process before it commits
	sync         bool    // Options.Sync
}

func (e childEnv) environ() []string {
	return append(os.Environ(),
		"PACE_LOCALSTORE_CHILD="+e.mode,
		"PACE_LOCALSTORE_DIR="+e.dir,
		"PACE_LOCALSTORE_KEY="+e.key,
		"PACE_LOCALSTORE_RULES="+e.rules,
		"PACE_LOCALSTORE_COUNTER_ABOVE="+strconv.Itoa(e.counterAbove),
		"PACE_LOCALSTORE_GLOBAL_JOBS="+strconv.Itoa(e.globalJobs),
		"PACE_LOCALSTORE_N="+strconv.Itoa(e.n),
		"PACE_LOCALSTORE_MAX_COST="+strconv.Itoa(max(e.maxCost, 1)),
		"PACE_LOCALSTORE_KILL_IN_TX="+strconv.FormatFloat(e.killInTx, 'g', -1, 64),
		"PACE_LOCALSTORE_SYNC="+strconv.FormatBool(e.sync),
	)
}

// TestChild is the body of the child processes; it does nothing in a
// normal run. It prints "admit <ns> <cost>" for every admission, once
// Admit has returned.
func TestChild(t *testing.T) {
	mode := os.Getenv("PACE_LOCALSTORE_CHILD")
	if mode == "" {
		t.Skip("helper process for the multi-process tests")
	}
	atoi := func(k string) int {
		n, _ := strconv.Atoi(os.Getenv(k))
		return n
	}
	o := localstore.Options{
		Dir: os.Getenv("PACE_LOCALSTORE_DIR"), Key: os.Getenv("PACE_LOCALSTORE_KEY"),
		Rules:        mustRules(t, os.Getenv("PACE_LOCALSTORE_RULES")),
		CounterAbove: atoi("PACE_LOCALSTORE_COUNTER_ABOVE"), GlobalJobs: atoi("PACE_LOCALSTORE_GLOBAL_JOBS"),
		Sync: os.Getenv("PACE_LOCALSTORE_SYNC") == "true",
	}
	s, err := localstore.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p, _ := strconv.ParseFloat(os.Getenv("PACE_LOCALSTORE_KILL_IN_TX"), 64); p > 0 {
		// Half the kills come before the commit (bbolt has written
		// nothing yet), half 0 to 2ms later: mostly during the commit
		// (page writes, fsyncs, the meta page) or while closing.
		localstore.SetTxHook(s, func() {
			switch r := rand.Float64(); {
			case r < p/2:
				fmt.Fprintln(os.Stderr, "killed in a transaction")
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			case r < p:
				fmt.Fprintln(os.Stderr, "killed in a commit")
				go func() {
					time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				}()
			}
		})
	}
	n, maxCost := atoi("PACE_LOCALSTORE_N"), atoi("PACE_LOCALSTORE_MAX_COST")
	ctx := context.Background()
	switch mode {
	case "hold":
		for range o.GlobalJobs {
			if _, err := s.Admit(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Println("held")
		// Hold them until killed. (A bare select{} would let the
		// runtime find every goroutine asleep and end the process.)
		for {
			time.Sleep(time.Hour)
		}
	case "bench":
		// Wait for the parent's start signal, then admit n calls.
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		for range n {
			a, err := s.Admit(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			a.Release()
		}
		st := s.Stats()
		fmt.Printf("done %d %d\n", st.Admitted, st.Store.RoundTrips)
		return
	}
	for i := 0; n == 0 || i < n; i++ {
		cost := 1 + rand.IntN(maxCost)
		a, err := s.Admit(ctx, cost)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("admit %d %d\n", a.At.UnixNano(), cost)
		a.Release()
	}
}

// child is a running child process.
type child struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	out   []string
	line  chan string // every line, for waitLine
	done  chan struct{}
	err   error // from Wait, once done is closed
	errb  strings.Builder
	stdin io.WriteCloser // bench children: the start signal
}

// startChild starts a child with env and collects its output.
func startChild(t testing.TB, env childEnv) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.count=1")
	cmd.Env = env.environ()
	c := &child{cmd: cmd, line: make(chan string, 1<<16), done: make(chan struct{})}
	cmd.Stderr = &c.errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if env.mode == "bench" {
		w, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.stdin = w
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.mu.Lock()
			c.out = append(c.out, sc.Text())
			c.mu.Unlock()
			select {
			case c.line <- sc.Text():
			default:
			}
		}
		c.err = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.done
	})
	return c
}

// waitLine waits for a line starting with prefix.
func (c *child) waitLine(t testing.TB, prefix string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l := <-c.line:
			if strings.HasPrefix(l, prefix) {
				return
			}
		case <-c.done:
			t.Fatalf("child exited (%v) before printing %q:\n%s", c.err, prefix, c.errb.String())
		case <-deadline:
			t.Fatalf("no %q from the child after %v", prefix, timeout)
		}
	}
}

// calls returns the admissions the children reported.
func calls(t *testing.T, cs ...*child) []throttle.Call {
	t.Helper()
	var all []throttle.Call
	for _, c := range cs {
		c.mu.Lock()
		for _, l := range c.out {
			f := strings.Fields(l)
			if len(f) != 3 || f[0] != "admit" {
				continue
			}
			ns, err1 := strconv.ParseInt(f[1], 10, 64)
			cost, err2 := strconv.Atoi(f[2])
			if err1 != nil || err2 != nil {
				t.Fatalf("child printed %q", l)
			}
			all = append(all, throttle.Call{At: time.Unix(0, ns), Cost: cost})
		}
		c.mu.Unlock()
	}
	return all
}

// checkCalls fails t if calls break any rule of spec, and returns the
// results.
func checkCalls(t *testing.T, spec string, calls []throttle.Call) []throttle.CheckResult {
	t.Helper()
	res := throttle.Check(mustRules(t, spec), calls)
	for _, r := range res {
		if r.Violations > 0 {
			t.Errorf("rule %s: %d violations among %d admissions (peak %d in one window)", r.Rule, r.Violations, len(calls), r.Peak)
		}
	}
	return res
}

// checkStore fails t unless the store of key in dir is consistent by
// bbolt's own check.
func checkStore(t *testing.T, dir, key string) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(dir, key+".db"), 0o600, &bbolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("open the store after the run: %v", err)
	}
	defer db.Close()
	_ = db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("bbolt check: %v", err)
		}
		return nil
	})
}

// randomRules returns 1 to 3 rules, count and cost, and the largest cost
// a call may have.
func randomRules(rng *rand.Rand) (string, int) {
	windows := []time.Duration{100 * time.Millisecond, 150 * time.Millisecond, 200 * time.Millisecond}
	var rules []throttle.Rule
	for range 1 + rng.IntN(3) {
		r := throttle.Rule{N: 3 + rng.IntN(6), Window: windows[rng.IntN(len(windows))]}
		if rng.IntN(2) == 0 {
			r.N, r.Cost = 10+rng.IntN(20), true
		}
		rules = append(rules, r)
	}
	return throttle.FormatRules(rules), max(min(throttle.MaxCost(rules), 6), 1)
}

// Processes with random rules admit concurrently: no rule is broken in
// any window, and the rules are what holds them back.
func TestProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 processes")
	}
	t.Parallel()
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	dir := t.TempDir()
	const procs, each = 4, 10
	for round := range 2 {
		spec, maxCost := randomRules(rng)
		env := childEnv{mode: "admit", dir: dir, key: "p" + strconv.Itoa(round), rules: spec, n: each, maxCost: maxCost}
		if round == 1 {
			env.counterAbove = -1
		}
		t.Run(fmt.Sprintf("%s counters=%v", spec, round == 1), func(t *testing.T) {
			t.Parallel()
			t.Logf("seed %d", seed)
			var cs []*child
			for range procs {
				cs = append(cs, startChild(t, env))
			}
			for i, c := range cs {
				<-c.done
				if c.err != nil {
					t.Fatalf("child %d: %v\n%s", i, c.err, c.errb.String())
				}
			}
			all := calls(t, cs...)
			if len(all) != procs*each {
				t.Fatalf("%d admissions reported, want %d", len(all), procs*each)
			}
			res := checkCalls(t, spec, all)
			busiest := 0.0
			for _, r := range res {
				busiest = max(busiest, r.PeakUsage)
			}
			if busiest < 0.8 {
				t.Errorf("peak usage %.2f of the busiest rule, want the rules to have held the calls back (>= 0.8)", busiest)
			}
			checkStore(t, dir, env.key)
		})
	}
}

// Processes killed with SIGKILL while they admit, some inside the
// transaction that records their call, leave a store that is whole and a
// quota that no later process exceeds.
func TestKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills 20 processes")
	}
	t.Parallel()
	dir := t.TempDir()
	// A log, a cost log and a counter (N above 100,000).
	const spec = "30/100ms,cost:120/200ms,1000000/s"
	env := childEnv{mode: "admit", dir: dir, key: "kill", rules: spec, maxCost: 5,
		sync: os.Getenv("PACE_LOCALSTORE_KILL_SYNC") == "true"} // the default durability, unless told
	steady := []*child{startChild(t, env), startChild(t, env)}
	victim := env
	victim.killInTx = 0.2
	var victims []*child
	var mu sync.Mutex
	var wg sync.WaitGroup
	var inTx, inCommit, byTest int
	// PACE_LOCALSTORE_KILLS raises the number of victims for a longer run.
	kills, _ := strconv.Atoi(os.Getenv("PACE_LOCALSTORE_KILLS"))
	kills = cmp.Or(kills, 18)
	for w := range 3 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for range (kills + 2) / 3 {
				c := startChild(t, victim)
				mu.Lock()
				victims = append(victims, c)
				mu.Unlock()
				select {
				case <-c.line: // its first admission
				case <-c.done:
				}
				select {
				case <-time.After(time.Duration(5+rng.IntN(60)) * time.Millisecond):
					_ = c.cmd.Process.Kill()
				case <-c.done:
				}
				<-c.done
				if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
					t.Errorf("victim: %v\n%s", c.err, c.errb.String())
				}
				mu.Lock()
				switch stderr := c.errb.String(); {
				case strings.Contains(stderr, "killed in a transaction"):
					inTx++
				case strings.Contains(stderr, "killed in a commit"):
					inCommit++ // or by the test, if it came first
				default:
					byTest++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, c := range steady {
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	all := calls(t, append(steady, victims...)...)
	t.Logf("%d admissions; victims: %d killed by the test at random, %d by themselves before a commit, %d 0-2ms after (in or after a commit)",
		len(all), byTest, inTx, inCommit)
	// The steady processes admitted all along: the kills happened under
	// traffic, not in an idle store.
	for i, c := range steady {
		if n := len(calls(t, c)); n < 10 {
			t.Errorf("steady process %d reported only %d admissions", i, n)
		}
	}
	checkCalls(t, spec, all)
	checkStore(t, dir, "kill")
	// A process coming after all that admits at once and finds the store
	// whole.
	last := startChild(t, childEnv{mode: "admit", dir: dir, key: "kill", rules: spec, maxCost: 5, n: 40})
	<-last.done
	if last.err != nil {
		t.Fatalf("last child: %v\n%s", last.err, last.errb.String())
	}
	checkCalls(t, spec, calls(t, append(append(steady, victims...), last)...))
	if _, err := localstore.Inspect(dir, "kill"); err != nil {
		t.Errorf("Inspect after the kills = %v", err)
	}
}

// A process holding every slot is killed: its slots are free at once (no
// lease to wait out), Inspect shows them as its and dead until taken, and
// no rule is broken afterwards.
func TestKillSlotHolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const spec = "20/100ms"
	o := localstore.WithSlotPoll(localstore.Options{GlobalJobs: 2}, 10*time.Millisecond)
	holder := startChild(t, childEnv{mode: "hold", dir: dir, key: "slots", rules: spec, globalJobs: 2})
	holder.waitLine(t, "held", 30*time.Second)
	s := open(t, dir, "slots", spec, o)
	ctx := context.Background()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := s.Admit(short, 1); err == nil || short.Err() == nil {
		t.Fatalf("Admit with both slots held by another process = %v, want the deadline", err)
	}
	q, err := localstore.Inspect(dir, "slots")
	if err != nil {
		t.Fatal(err)
	}
	pid := holder.cmd.Process.Pid
	if len(q.Slots) != 2 || !q.Slots[0].Alive || q.Slots[0].PID != pid || !q.Slots[1].Alive || q.Slots[1].PID != pid {
		t.Fatalf("Inspect().Slots = %+v, want both held by pid %d", q.Slots, pid)
	}

	_ = holder.cmd.Process.Kill()
	<-holder.done
	killed := time.Now()
	q, err = localstore.Inspect(dir, "slots")
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Slots) != 2 || q.Slots[0].Alive || q.Slots[0].PID != pid {
		t.Errorf("Inspect().Slots after the kill = %+v, want both dead, last held by pid %d", q.Slots, pid)
	}
	var all []throttle.Call
	var held []throttle.Admission
	for range 2 {
		a, err := s.Admit(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, a)
		all = append(all, throttle.Call{At: a.At, Cost: 1})
	}
	// At once: no lease to wait out. The bound is generous (a loaded
	// machine under -race took a second once); a slot freed by a lease
	// or never would take far longer, or hang.
	if d := time.Since(killed); d > 5*time.Second {
		t.Errorf("both slots taken %v after their holder died, want at once", d)
	}
	for _, a := range held {
		a.Release()
	}
	// Another process shares the quota from now on: still no rule broken,
	// the dead holder's admissions included.
	other := startChild(t, childEnv{mode: "admit", dir: dir, key: "slots", rules: spec, globalJobs: 2, n: 30})
	for range 30 {
		a, err := s.Admit(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, throttle.Call{At: a.At, Cost: 1})
		a.Release()
	}
	<-other.done
	if other.err != nil {
		t.Fatalf("child: %v\n%s", other.err, other.errb.String())
	}
	all = append(all, calls(t, other)...)
	checkCalls(t, spec, all)
	if len(all) != 62 {
		t.Errorf("%d admissions, want 62", len(all))
	}
}

// TestLockFileRemoved: a process keeps its quota's lock file open between
// transactions; once the file is removed (a state directory deleted by
// hand), its next transaction locks the new file that other processes
// create and lock, never the removed one, or the quota would be split.
func TestLockFileRemoved(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, "rm", "1000/s", localstore.Options{})
	lockPath := strings.TrimSuffix(s.Path(), ".db") + ".lock"
	admit := func() {
		t.Helper()
		a, err := s.Admit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		a.Release()
	}
	admit()
	if err := os.Remove(lockPath); err != nil {
		t.Fatal(err)
	}
	other := open(t, dir, "rm", "1000/s", localstore.Options{})
	if a, err := other.Admit(context.Background(), 1); err != nil {
		t.Fatal(err)
	} else {
		a.Release()
	}
	var lockedByOther error
	localstore.SetTxHook(s, func() {
		f, err := os.OpenFile(lockPath, os.O_RDWR, 0)
		if err != nil {
			lockedByOther = err
			return
		}
		defer f.Close()
		lockedByOther = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	})
	admit()
	if !errors.Is(lockedByOther, syscall.EWOULDBLOCK) {
		t.Errorf("during a transaction after %s was removed and made again, locking it = %v, want EWOULDBLOCK (the transaction holds it)", lockPath, lockedByOther)
	}
}
