//go:build unix

package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/throttle"
	"github.com/pace-cli/pace/throttle/localstore"
)

// Tests of --key without --redis: the local store shared by pace
// processes on one host. The processes are real: the pace that
// testscript.Main puts on $PATH (script_test.go), run from here.

// paceProcess starts pace with args, its stdout and stderr in files of
// dir named after name; wait returns its exit code and stderr.
func paceProcess(t *testing.T, dir, name string, args ...string) (wait func() (int, string)) {
	t.Helper()
	errPath := filepath.Join(dir, name+".stderr")
	stderr, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c := exec.CommandContext(ctx, "pace", args...)
	c.Stdout, c.Stderr = nil, stderr
	c.Env = append(os.Environ(), redisURLEnv+"=", "GORACE=atexit_sleep_ms=0")
	if err := c.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	return func() (int, string) {
		defer cancel()
		_ = c.Wait()
		stderr.Close()
		b, _ := os.ReadFile(errPath)
		return c.ProcessState.ExitCode(), string(b)
	}
}

// logStarts returns the admission instants of a job log's rows.
func logStarts(t *testing.T, path string) []time.Time {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := joblog.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	var ts []time.Time
	for _, e := range l.Entries {
		ts = append(ts, e.Start)
	}
	return ts
}

// checkRules fails t for every rule of spec that calls break.
func checkRules(t *testing.T, spec string, times []time.Time) {
	t.Helper()
	rules, err := throttle.ParseRules(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range throttle.Check(rules, calls1(times...)) {
		if r.Violations > 0 {
			t.Errorf("rule %s broken %d times among %d calls (peak %d in a window)", r.Rule, r.Violations, len(times), r.Peak)
		}
	}
}

// TestLocalExactAcrossProcesses: pace run and pace exec processes
// sharing one key, started at once with random rules, admit calls that
// keep every rule together, by the store's clock.
func TestLocalExactAcrossProcesses(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	n1, w1 := 2+rng.IntN(3), time.Duration(150+rng.IntN(150))*time.Millisecond
	n2, w2 := n1+4+rng.IntN(4), time.Duration(300+rng.IntN(200))*time.Millisecond
	spec := fmt.Sprintf("%d/%dms,%d/%dms", n1, w1.Milliseconds(), n2, w2.Milliseconds())
	t.Logf("seed %d: rules %s", seed, spec)

	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	const runs, perRun, execs = 3, 4, 8
	var waits []func() (int, string)
	for i := range runs {
		items := filepath.Join(dir, fmt.Sprintf("items%d", i))
		if err := os.WriteFile(items, []byte("a\nb\nc\nd\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		waits = append(waits, paceProcess(t, dir, fmt.Sprintf("run%d", i), "run", "--key", "k", "--state", state, "-r", spec,
			"-j", "2", "-a", items, "--joblog", filepath.Join(dir, fmt.Sprintf("run%d.log", i)), "--summary", "none", "--", "true"))
	}
	for i := range execs {
		waits = append(waits, paceProcess(t, dir, fmt.Sprintf("exec%d", i), "exec", "--key", "k", "--state", state, "-r", spec, "--wait-only", "-v"))
	}
	var times []time.Time
	for i, wait := range waits {
		code, stderr := wait()
		if code != 0 {
			t.Fatalf("process %d: exit %d: %s", i, code, stderr)
		}
		if i >= runs {
			at, ok := admittedAt(stderr)
			if !ok {
				t.Fatalf("pace exec -v said no admission instant: %q", stderr)
			}
			times = append(times, at)
		}
	}
	for i := range runs {
		times = append(times, logStarts(t, filepath.Join(dir, fmt.Sprintf("run%d.log", i)))...)
	}
	if len(times) != runs*perRun+execs {
		t.Fatalf("%d admissions, want %d", len(times), runs*perRun+execs)
	}
	checkRules(t, spec, times)
}

// TestLocalSlotAfterSIGKILL: a pace exec killed with SIGKILL while it
// holds the only --global-jobs slot gives it back at once (and, on Linux,
// its command dies with it), and the runs after it keep the rules and the
// cap.
func TestLocalSlotAfterSIGKILL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	const spec = "3/400ms"
	shared := []string{"--key", "s", "--state", state, "-r", spec, "--global-jobs", "1"}
	started, childPID := filepath.Join(dir, "started"), filepath.Join(dir, "child.pid")
	errFile, err := os.Create(filepath.Join(dir, "holder.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	// The command says it started with a builtin (`:`), not touch: a
	// touch still exiting when pace was killed held the inherited slot
	// file (by design: the slot is held while anything the command started
	// runs), and under load Inspect saw the slot held by it.
	holder := exec.Command("pace", append(append([]string{"exec"}, shared...), "-v", "--", "sh", "-c",
		`echo $$ > "$0"; : > "$1"; exec sleep 30 >/dev/null 2>&1`, childPID, started)...)
	holder.Stderr = errFile
	holder.Env = append(os.Environ(), redisURLEnv+"=")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the holder's command to start", func() bool { _, err := os.Stat(started); return err == nil })
	t.Cleanup(func() { // the command outlives pace: end it too
		if b, err := os.ReadFile(childPID); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	q, err := localstore.Inspect(state, "s")
	if err != nil || len(q.Slots) != 1 || !q.Slots[0].Alive || q.Slots[0].PID != holder.Process.Pid {
		t.Fatalf("while the holder runs: Inspect = %+v, %v; want its slot held by pid %d", q, err, holder.Process.Pid)
	}

	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()
	if runtime.GOOS == "linux" { // the command dies with its pace (Pdeathsig)
		b, _ := os.ReadFile(childPID)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		waitFor(t, "the command to die with its pace", func() bool {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			return err != nil || strings.HasPrefix(strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))[0], "Z")
		})
	}
	b, _ := os.ReadFile(errFile.Name())
	heldAt, ok := admittedAt(string(b))
	if !ok {
		t.Fatalf("the holder said no admission instant: %q", b)
	}

	// The slot is free at once: the kernel dropped the dead holder's lock.
	q, err = localstore.Inspect(state, "s")
	if err != nil || len(q.Slots) != 1 || q.Slots[0].Alive {
		t.Errorf("after SIGKILL: Inspect = %+v, %v; want the slot free, its dead holder shown", q, err)
	}
	begin := time.Now()
	code, _, stderr := execPace(t, "", append(append([]string{"exec"}, shared...), "--wait-only", "-v")...)
	if code != 0 {
		t.Fatalf("the next call: exit %d: %s", code, stderr)
	}
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("the next call took %v, want the slot back at once (and at most a window's wait)", d)
	}
	nextAt, _ := admittedAt(stderr)

	// Then a run of 6 jobs with -j 3 keeps the rules, and runs one job at
	// a time: each starts once the one before ended.
	jl := filepath.Join(dir, "after.log")
	code, _, stderr = execPace(t, strings.Repeat("0.02\n", 6), append(append([]string{"run"}, shared...),
		"-j", "3", "--joblog", jl, "--summary", "none", "--", "sleep")...)
	if code != 0 {
		t.Fatalf("the run after: exit %d: %s", code, stderr)
	}
	f, err := os.Open(jl)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := joblog.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	times := []time.Time{heldAt, nextAt}
	es := slices.SortedFunc(slices.Values(l.Entries), func(a, b joblog.Entry) int { return a.Start.Compare(b.Start) })
	for i, e := range es {
		times = append(times, e.Start)
		if i > 0 && e.Start.Before(es[i-1].Start.Add(es[i-1].Runtime)) {
			t.Errorf("job %d started at %v, before job %d ended (%v + %v): two in flight with --global-jobs 1",
				e.Seq, e.Start, es[i-1].Seq, es[i-1].Start, es[i-1].Runtime)
		}
	}
	if len(es) != 6 {
		t.Fatalf("%d rows, want 6", len(es))
	}
	checkRules(t, spec, times)
}

// TestLocalStoreRefusals: other rules are refused with exit 2; a damaged
// store, or one a newer pace wrote, with exit 3 and a line naming its
// file, which is left as it was.
func TestLocalStoreRefusals(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	execWith := func(key, rules string) (int, string) {
		code, _, stderr := execPace(t, "", "exec", "--key", key, "--state", state, "-r", rules, "--wait-only")
		return code, stderr
	}
	if code, stderr := execWith("m", "10/s,20/10s"); code != 0 {
		t.Fatalf("first call: exit %d: %s", code, stderr)
	}
	code, stderr := execWith("m", "10/s,21/10s")
	want := fmt.Sprintf("pace: local quota \"m\" in %s is kept with rules \"10/s,20/10s\", this process has \"10/s,21/10s\": "+
		"give every process sharing --key the same -r and --global-jobs, use another --key, "+
		"wait until the quota has been unused for its longest window, or forget it with pace quota reset --key m --state %s\n", state, state)
	if code != ExitUsage || stderr != want {
		t.Errorf("other rules: exit %d, stderr\n%s\nwant 2 and\n%s", code, stderr, want)
	}

	// Damaged: garbage.
	bad := filepath.Join(state, "bad.db")
	garbage := bytes.Repeat([]byte("not a store "), 500)
	if err := os.WriteFile(bad, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr = execWith("bad", "1/s")
	if code != ExitBackend || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, bad) || !strings.Contains(stderr, "damaged") {
		t.Errorf("damaged store: exit %d, stderr %q; want 3 and one line naming %s", code, stderr, bad)
	}
	if b, _ := os.ReadFile(bad); !bytes.Equal(b, garbage) {
		t.Errorf("the damaged store was changed")
	}

	// Newer: a store whose format version is 2.
	if code, stderr := execWith("new", "1/s"); code != 0 {
		t.Fatalf("first call: exit %d: %s", code, stderr)
	}
	path := filepath.Join(state, "new.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("version"), []byte{0, 0, 0, 0, 0, 0, 0, 2})
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	for _, args := range [][]string{
		{"exec", "--key", "new", "--state", state, "-r", "1/s", "--", "true"},
		{"run", "--key", "new", "--state", state, "-r", "1/s", "--", "true"},
		{"quota", "show", "--key", "new", "--state", state},
	} {
		code, _, stderr = execPace(t, "x\n", args...)
		if code != ExitBackend || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, path) || !strings.Contains(stderr, "newer than this pace knows") {
			t.Errorf("pace %q on a newer store: exit %d, stderr %q; want 3 and one line naming %s as newer", args, code, stderr, path)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("the newer store was changed")
	}
}

// TestLocalStoreFailsMidRun: a store that becomes unreadable during a run
// stops it with exit 3 and a message naming the quota and its file.
func TestLocalStoreFailsMidRun(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	_, stderr, wait := startPace(t, "1\n2\n3\n4\n5\n6\n", "run", "--key", "k", "--state", state, "-r", "2/s", "--summary", "none", "--progress", "never", "--", "true")
	waitFor(t, "a call recorded", func() bool {
		q, err := localstore.Inspect(state, "k")
		return err == nil && len(q.Rules) == 1 && q.Rules[0].Used >= 1
	})
	// Under the store's lock, so that no transaction is under way.
	lock, err := os.OpenFile(filepath.Join(state, "k.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(state, "k.db")
	err = os.WriteFile(path, bytes.Repeat([]byte("garbage "), 4096), 0o600)
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if err != nil {
		t.Fatal(err)
	}
	if code := wait(); code != ExitBackend {
		t.Errorf("exit %d, want 3: %s", code, stderr)
	}
	if want := "local quota k at " + path + ": "; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr:\n%s\nwant it to name %q", stderr, want)
	}
}

// TestLocalFlags: --key alone means the local store, in --state or the
// default directory.
func TestLocalFlags(t *testing.T) {
	t.Setenv(redisURLEnv, "")
	ro, err := parseRun(t, "-r", "1/s", "--key", "api", "--state", "/tmp/st", "--global-jobs", "2")
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.Common.check(); err != nil || !ro.Common.Redis.Local() || ro.Common.Redis.State != "/tmp/st" || ro.Common.Redis.Key != "api" {
		t.Errorf("--key --state: Redis = %+v, check() = %v; want the local quota api in /tmp/st", ro.Common.Redis, err)
	}
	// $PACE_REDIS_URL makes --key Redis's; --redis= turns it off.
	t.Setenv(redisURLEnv, "redis://127.0.0.1:1")
	ro, _ = parseRun(t, "-r", "1/s", "--key", "api")
	if err := ro.Common.check(); err != nil || ro.Common.Redis.Local() {
		t.Errorf("--key with $%s: Local() = true, check() = %v; want Redis", redisURLEnv, err)
	}
	ro, _ = parseRun(t, "-r", "1/s", "--key", "api", "--redis=")
	if err := ro.Common.check(); err != nil || !ro.Common.Redis.Local() {
		t.Errorf("--key --redis=: Local() = false, check() = %v; want the local store", err)
	}
	ro, _ = parseRun(t, "-r", "1/s", "--key", "api", "--state", "d")
	var fe *FlagError
	if err := ro.Common.check(); !errors.As(err, &fe) || !strings.Contains(err.Error(), "$PACE_REDIS_URL keeps the quota in Redis") {
		t.Errorf("--state with $%s: check() = %v, want a FlagError naming it", redisURLEnv, err)
	}
	// The default directory: $PACE_STATE_DIR.
	t.Setenv(redisURLEnv, "")
	dir := t.TempDir()
	t.Setenv("PACE_STATE_DIR", dir)
	if code, _, stderr := execPace(t, "", "exec", "--key", "d", "-r", "5/s", "--wait-only"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "d.db")); err != nil {
		t.Errorf("the store is not in $PACE_STATE_DIR: %v", err)
	}
}

// TestLocalStoreHostileFiles: what another member of a shared state
// directory's group, or a full disk, can leave at a store's names. A link,
// a FIFO or a directory is refused with exit 3 and one line naming it,
// at once; an empty store file (a creation that did not finish) is no
// quota yet, and the next call creates it; a store that cannot be read
// or reset exits 3, not 2 (usage).
func TestLocalStoreHostileFiles(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		plant func(path string) error
		what  string
	}{
		{"symlink", func(p string) error { return os.Symlink("/nonexistent/victim", p) }, "is a symbolic link"},
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) }, "is a FIFO"},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, "is a directory"},
	} {
		state := t.TempDir()
		path := filepath.Join(state, "h.db")
		if err := tt.plant(path); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"exec", "--key", "h", "--state", state, "-r", "5/s", "--", "true"},
			{"quota", "show", "--key", "h", "--state", state},
		} {
			start := time.Now()
			code, _, stderr := execPace(t, "", args...)
			if code != ExitBackend || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, path+" "+tt.what) {
				t.Errorf("%s: pace %q: exit %d, stderr %q; want 3 and one line saying %s %s", tt.name, args, code, stderr, path, tt.what)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%s: pace %q took %v, want at once", tt.name, args, d)
			}
		}
	}

	// An empty store file.
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, "e.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := execPace(t, "", "quota", "show", "--key", "e", "--state", state); code != ExitFailed {
		t.Errorf("pace quota show on an empty store: exit %d, stderr %q; want 1 (no quota)", code, stderr)
	}
	if code, _, stderr := execPace(t, "", "exec", "--key", "e", "--state", state, "-r", "5/s", "--", "true"); code != 0 {
		t.Errorf("pace exec on an empty store: exit %d, stderr %q; want 0", code, stderr)
	}
	if code, stdout, stderr := execPace(t, "", "quota", "show", "--key", "e", "--state", state); code != 0 || !strings.Contains(stdout, "1/5") {
		t.Errorf("pace quota show after a call: exit %d, stdout %q, stderr %q; want 0 and 1/5 used", code, stdout, stderr)
	}

	// Slots that cannot be read (a file where their directory goes).
	if err := os.WriteFile(filepath.Join(state, "e.slots"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := execPace(t, "", "quota", "show", "--key", "e", "--state", state); code != ExitBackend || strings.Count(stderr, "\n") != 1 {
		t.Errorf("pace quota show with unreadable slots: exit %d, stderr %q; want 3 and one line", code, stderr)
	}
}
