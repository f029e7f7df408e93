//go:build unix

package cmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/internal/strictserver"
	"github.com/pace-cli/pace/internal/tcptest"
	"github.com/pace-cli/pace/throttle"
)

// This file holds the commands the scripts in testdata/script use besides
// pace itself: strict servers, Redis servers, and a backend that fails.

// cmdStrictserver starts a loopback strict server (internal/strictserver)
// for the rest of the script and sets $NAME to its URL:
//
//	strictserver NAME [-rules 5/s,12/3s] [-refuse N] [-retry-after 1s] [-date]
//	                  [-reset N] [-headers ietf|x] [-delay 10ms]
//
// Besides the strict server's own paths it serves, without counting them
// as arrivals: /_stats (its counts as JSON, for serverstats), /_requests
// (each request's arrival, outcome and path, for judge), /_headers
// (the request's headers, one "Name: value" per line, sorted), /_deny
// (401, echoing the Authorization header), /_body
// (method and body), /_big/N (N bytes) and /_stall/... (64 KiB, then
// nothing until the client goes away).
func cmdStrictserver(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: strictserver NAME [flags]")
	}
	fs := flag.NewFlagSet("strictserver", flag.ContinueOnError)
	rules := fs.String("rules", "", "")
	var o strictserver.Options
	fs.IntVar(&o.RefuseFirst, "refuse", 0, "")
	fs.DurationVar(&o.RetryAfter, "retry-after", 0, "")
	fs.BoolVar(&o.RetryAfterDate, "date", false, "")
	fs.IntVar(&o.ResetFirst, "reset", 0, "")
	fs.DurationVar(&o.Delay, "delay", 0, "")
	fs.BoolVar(&o.RuleRetryAfter, "rule-retry-after", false, "")
	fs.BoolVar(&o.Policy, "policy", false, "")
	fs.StringVar(&o.CostParam, "cost-param", "", "")
	fs.Float64Var(&o.UsageFactor, "usage-factor", 0, "")
	headers := fs.String("headers", "", "")
	ts.Check(fs.Parse(args[1:]))
	var err error
	o.Rules, err = throttle.ParseRules(*rules)
	ts.Check(err)
	switch *headers {
	case "":
	case "ietf":
		o.Headers = strictserver.RateLimitHeaders
	case "x":
		o.Headers = strictserver.XRateLimitHeaders
	default:
		ts.Fatalf("strictserver: -headers %q, want ietf or x", *headers)
	}
	o.Record = true // for judge
	ss, err := strictserver.New(o)
	ts.Check(err)
	var stalled atomic.Int64 // requests to /_stall/ the server is holding
	mux := http.NewServeMux()
	mux.Handle("/", ss)
	mux.HandleFunc("/_stats", func(w http.ResponseWriter, _ *http.Request) {
		st := ss.Stats()
		var cost int64
		for _, c := range ss.Calls() {
			cost += int64(c.Cost)
		}
		json.NewEncoder(w).Encode(map[string]int64{"accepted": st.Accepted, "refused": st.Refused, "reset": st.Reset, "cost": cost, "stalled": stalled.Load()})
	})
	mux.HandleFunc("/_requests", func(w http.ResponseWriter, _ *http.Request) {
		for _, r := range ss.Requests() {
			fmt.Fprintf(w, "%d %s %s\n", r.At.UnixNano(), r.Outcome, r.Path)
		}
	})
	mux.HandleFunc("/_headers", func(w http.ResponseWriter, r *http.Request) {
		var lines []string
		for name, vals := range r.Header {
			for _, v := range vals {
				lines = append(lines, name+": "+v)
			}
		}
		slices.Sort(lines)
		io.WriteString(w, strings.Join(lines, "\n")+"\n")
	})
	mux.HandleFunc("/_redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/_deny", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "denied: %s\n", r.Header.Get("Authorization"))
	})
	mux.HandleFunc("/_body", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s\n", r.Method, b)
	})
	mux.HandleFunc("/_big/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		chunk := []byte(strings.Repeat("x", 1023) + "\n")
		for ; n >= len(chunk); n -= len(chunk) {
			w.Write(chunk)
		}
		w.Write(chunk[:n])
	})
	mux.HandleFunc("/_stall/", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("partial\n", 8<<10)))
		w.(http.Flusher).Flush()
		stalled.Add(1)
		defer stalled.Add(-1)
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}

// cmdWaitstalled waits (up to 20s) until a strictserver holds at least N
// requests to /_stall/, each after its first 64 KiB: a command in the
// background is then surely under way, whatever the machine's load. If
// they never come, the last background command is killed, as waitgrep
// does.
//
//	waitstalled NAME N
func cmdWaitstalled(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitstalled NAME N")
	}
	want, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(ts.Getenv(args[0]) + "/_stats")
		ts.Check(err)
		var st map[string]int64
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		ts.Check(err)
		if st["stalled"] >= want {
			return
		}
		if time.Now().After(deadline) {
			if bg := ts.BackgroundCmds(); len(bg) > 0 && bg[len(bg)-1].Process != nil {
				bg[len(bg)-1].Process.Kill() // or the script waits for it forever
			}
			ts.Fatalf("the server holds %d stalled requests after 20s, want %d", st["stalled"], want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cmdServerstats checks a strictserver's counts:
//
//	serverstats NAME accepted N refused N [reset N]
//
// With !, it passes when some count differs.
func cmdServerstats(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 || len(args)%2 != 1 {
		ts.Fatalf("usage: serverstats NAME (accepted|refused|reset) N ...")
	}
	resp, err := http.Get(ts.Getenv(args[0]) + "/_stats")
	ts.Check(err)
	defer resp.Body.Close()
	var st map[string]int64
	ts.Check(json.NewDecoder(resp.Body).Decode(&st))
	var diffs []string
	for i := 1; i < len(args); i += 2 {
		want, err := strconv.ParseInt(args[i+1], 10, 64)
		ts.Check(err)
		if got, ok := st[args[i]]; !ok || got != want {
			diffs = append(diffs, fmt.Sprintf("%s %d, want %d", args[i], got, want))
		}
	}
	switch {
	case !neg && len(diffs) > 0:
		ts.Fatalf("server: %s", strings.Join(diffs, "; "))
	case neg && len(diffs) == 0:
		ts.Fatalf("server counts %v match, want a difference", st)
	}
}

// cmdJudge judges a strictserver's refusals by the job logs of the runs
// that called it (strictserver.Judge): the admissions must keep every rule
// widened by MARGIN (the runs' --margin, or their adaptive margin's
// least), and a refusal fails the script unless lags more than MARGIN
// apart explain it; such a refusal is logged with its numbers.
//
//	judge NAME MARGIN JOBLOG...
//
// Each row's call is the request whose path follows $NAME in its command,
// rows and requests of one path paired in the order of admission and of
// arrival: every request the server saw needs a row, every row a request.
func cmdJudge(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: judge NAME MARGIN JOBLOG...")
	}
	base := ts.Getenv(args[0])
	margin, err := time.ParseDuration(args[1])
	ts.Check(err)
	var rules []throttle.Rule
	var rows []joblog.Entry
	for _, name := range args[2:] {
		jl, err := joblog.Read(strings.NewReader(ts.ReadFile(name)))
		ts.Check(err)
		if rules == nil {
			rules = jl.Rules
		}
		rows = append(rows, jl.Entries...)
	}
	if len(rules) == 0 {
		ts.Fatalf("%s: no rules in its header", args[2])
	}
	resp, err := http.Get(base + "/_requests")
	ts.Check(err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	ts.Check(err)
	var reqs []strictserver.Request
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue // none
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		ts.Check(err)
		reqs = append(reqs, strictserver.Request{At: time.Unix(0, ns), Outcome: f[1], Path: f[2]})
	}
	v, err := judgeRows(rules, margin, base, rows, reqs)
	ts.Check(err)
	for _, x := range v.Excused {
		ts.Logf("excused by the machine: %s", x)
	}
	if len(v.Faults) > 0 {
		ts.Fatalf("pace's admissions explain what the server saw:\n%s", strings.Join(v.Faults, "\n"))
	}
}

// judgeRows pairs job log rows with the requests a strict server at base
// saw (a row's call is the request whose path follows base in its
// command; rows and requests of one path paired in order of admission and
// of arrival) and judges them (strictserver.Judge) against margin, less
// the microsecond to which job logs keep admissions. Every request needs
// a row and every row a request.
func judgeRows(rules []throttle.Rule, margin time.Duration, base string, rows []joblog.Entry, reqs []strictserver.Request) (strictserver.Verdict, error) {
	byPath := map[string][]joblog.Entry{}
	for _, e := range rows {
		_, path, ok := strings.Cut(e.Command, base)
		if !ok {
			return strictserver.Verdict{}, fmt.Errorf("job log row %d calls no %s: %s", e.Seq, base, e.Command)
		}
		path, _, _ = strings.Cut(path, " ")
		byPath[path] = append(byPath[path], e)
	}
	for _, es := range byPath {
		slices.SortStableFunc(es, func(a, b joblog.Entry) int { return a.Start.Compare(b.Start) })
	}
	var sent []strictserver.Sent
	for _, r := range reqs {
		if len(byPath[r.Path]) == 0 {
			return strictserver.Verdict{}, fmt.Errorf("the server saw %s (%s) with no job log row left for it", r.Path, r.Outcome)
		}
		e := byPath[r.Path][0]
		byPath[r.Path] = byPath[r.Path][1:]
		sent = append(sent, strictserver.Sent{Name: r.Path, Admitted: e.Start, Arrived: r.At, Cost: e.Cost(), Refused: r.Outcome == "refused"})
	}
	for path, es := range byPath {
		if len(es) > 0 {
			return strictserver.Verdict{}, fmt.Errorf("%s: %d job log rows the server never saw", path, len(es))
		}
	}
	return strictserver.Judge(rules, margin-time.Microsecond, sent), nil
}

// Script support: redis_*.txtar start servers with the redis command.

// cmdRedis starts a redis-server for a script, or names a dead address:
//
//	redis start NAME [redis-server args...]  $NAME=redis://127.0.0.1:PORT, $NAME_ADDR=127.0.0.1:PORT
//	redis dead NAME                          the same for a port where nothing listens
//	redis silent NAME                        the same for a port that never answers
//
// The server is killed when the script ends. Scripts that start one
// begin with "[!exec:redis-server] skip"; the Go tests of this package
// fail under CI=true when redis-server is missing.
func cmdRedis(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: redis {start|dead|silent} NAME [args...]")
	}
	var addr string
	switch args[0] {
	case "start":
		addr = redistest.Start(scriptTB{ts: ts}, args[2:]...).Addr()
	case "dead":
		addr = redistest.DeadAddr(scriptTB{ts: ts}) // a port closed after Listen could be another server's by then
	case "silent":
		addr = tcptest.Serve(scriptTB{ts: ts}, silentServe)
	default:
		ts.Fatalf("redis %s: want start, dead or silent", args[0])
	}
	ts.Setenv(args[1], "redis://"+addr)
	ts.Setenv(args[1]+"_ADDR", addr)
}

// scriptTB lets redistest run inside a script command: it reports to the
// script and cleans up when the script ends. It implements only what
// redistest uses (Helper, Fatalf, Skipf, TempDir, Cleanup); the embedded
// nil TB makes anything else panic.
type scriptTB struct {
	testing.TB
	ts *testscript.TestScript
}

func (scriptTB) Helper()                             {}
func (s scriptTB) Fatalf(format string, args ...any) { s.ts.Fatalf(format, args...) }
func (s scriptTB) Fatal(args ...any)                 { s.ts.Fatalf("%s", fmt.Sprint(args...)) }
func (s scriptTB) Skipf(format string, args ...any)  { s.ts.Fatalf(format, args...) } // see cmdRedis
func (s scriptTB) Cleanup(f func())                  { s.ts.Defer(f) }

func (s scriptTB) TempDir() string {
	dir, err := os.MkdirTemp(s.ts.Getenv("WORK"), "redis")
	s.ts.Check(err)
	return dir
}

// failingBackend admits n calls, then fails as a dead store would.
type failingBackend struct {
	*throttle.Limiter
	mu sync.Mutex
	n  int
}

func newFailingBackend(n int) *failingBackend {
	l, _ := throttle.New(throttle.Options{})
	return &failingBackend{Limiter: l, n: n}
}

func (b *failingBackend) Admit(ctx context.Context, cost int) (throttle.Admission, error) {
	b.mu.Lock()
	if b.n == 0 {
		b.mu.Unlock()
		return throttle.Admission{}, fmt.Errorf("redis: connection refused: %w", throttle.ErrBackend)
	}
	b.n--
	b.mu.Unlock()
	return b.Limiter.Admit(ctx, cost)
}

var _ = time.Second

// cmdTmpfs mounts a small tmpfs, to fill a disk, read-only, or with room
// for N files and directories only (its root one of them):
//
//	tmpfs DIR SIZE [ro | inodes=N]
//
// Scripts use it under the [root] condition (root on Linux); it unmounts
// when the script ends.
func cmdTmpfs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 || len(args) == 3 && args[2] != "ro" && !strings.HasPrefix(args[2], "inodes=") {
		ts.Fatalf("usage: tmpfs dir size [ro | inodes=N]")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	opts := "size=" + args[1]
	if len(args) == 3 {
		opts += "," + strings.Replace(args[2], "inodes=", "nr_inodes=", 1)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		ts.Fatalf("mount a tmpfs: %v: %s", err, out)
	}
	ts.Defer(func() { exec.Command("umount", "-l", dir).Run() })
}

// scriptCondition answers the scripts' own conditions: [root] holds for
// root on Linux, where a test can mount a small tmpfs to fill a disk, if
// mounting one works (root in a container may not have the right).
func scriptCondition(cond string) (bool, error) {
	switch cond {
	case "root":
		return runtime.GOOS == "linux" && os.Geteuid() == 0 && canMountTmpfs(), nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// canMountTmpfs reports whether a tmpfs can be mounted, trying once.
var canMountTmpfs = sync.OnceValue(func() bool {
	dir, err := os.MkdirTemp("", "pace-tmpfs-probe")
	if err != nil {
		return false
	}
	defer os.Remove(dir)
	if exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).Run() != nil {
		return false
	}
	return exec.Command("umount", dir).Run() == nil
})

// cmdGone waits (up to 10s) until the process whose pid is in a file has
// died, or with ! checks that it is still alive. With -reaped it waits
// until its parent has also reaped it (a zombie is not enough): for a
// signal meant for that parent once it has seen its child end.
//
//	gone [-reaped] PIDFILE
func cmdGone(ts *testscript.TestScript, neg bool, args []string) {
	reaped := len(args) == 2 && args[0] == "-reaped" && !neg
	if reaped {
		args = args[1:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: gone [-reaped] pidfile")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	ts.Check(err)
	alive := func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return syscall.Kill(pid, 0) == nil
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		return len(f) > 0 && (f[0] != "Z" || reaped)
	}
	if neg {
		if !alive() {
			ts.Fatalf("process %d is gone, want it alive", pid)
		}
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive() {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			ts.Fatalf("process %d outlived pace", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdRows checks a job log against the side effects of its jobs: every
// item that ran (a line in SIDE) has a row in LOG, or is named in the
// file NAMED (pace's message listing items without a row); no row is
// torn; no item ran twice.
//
//	rows LOG SIDE [NAMED]
func cmdRows(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: rows joblog side [named]")
	}
	data := ts.ReadFile(args[0])
	if data != "" && !strings.HasSuffix(data, "\n") {
		ts.Fatalf("%s ends in a torn row: %q", args[0], data[max(0, len(data)-60):])
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(data), "\n")[1:] {
		f := strings.Split(line, "\t")
		if len(f) < 9 {
			ts.Fatalf("%s: malformed row %q", args[0], line)
		}
		rows[f[0]] = true
	}
	named := map[string]bool{}
	if len(args) == 3 {
		if m := regexp.MustCompile(`that ran: ([0-9 ]+)`).FindStringSubmatch(ts.ReadFile(args[2])); m != nil {
			for _, s := range strings.Fields(m[1]) {
				named[s] = true
			}
		}
	}
	seen := map[string]int{}
	for _, item := range strings.Fields(ts.ReadFile(args[1])) {
		seen[item]++
		if seen[item] > 1 {
			ts.Fatalf("item %s ran twice", item)
		}
		if !rows[item] && !named[item] {
			ts.Fatalf("item %s ran but has no row and is not named", item)
		}
	}
}

// stopped PIDFILE waits (up to 10s) until the process whose pid is in
// PIDFILE is stopped (state T in /proc, Linux); ! stopped, until it is
// not.
func cmdStopped(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: stopped pidfile")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	ts.Check(err)
	state := func() string {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		ts.Check(err)
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		return f[0]
	}
	deadline := time.Now().Add(10 * time.Second)
	for (state() == "T") != !neg {
		if time.Now().After(deadline) {
			ts.Fatalf("process %d: state %s, want it stopped: %v", pid, state(), !neg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
