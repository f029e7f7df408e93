//go:build unix

package cmd

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pace-cli/pace/internal/redistest"
	"github.com/pace-cli/pace/internal/strictserver"
	"github.com/pace-cli/pace/throttle"
)

// The fleet: several real pace processes sharing one quota in a real
// redis-server, against a strict HTTP server that refuses any call
// breaking the rules by its own clock. scripts/bench.sh can run TestFleet
// with a tight tolerance, and BenchmarkFleetAdmit for the cost of an
// admission.

var (
	fleetTolerance = flag.Float64("fleet-tolerance", 0.25,
		"TestFleet: largest allowed (makespan - fastest legal makespan) / fastest")
	fleetMargin = flag.Duration("fleet-margin", 100*time.Millisecond,
		"TestFleet: --margin of the pace processes, to absorb the delay between admission and arrival")
)

// The fleet of the issue: 4 processes, 50 URLs each, under 20/1s AND 60/5s.
const (
	fleetProcs = 4
	fleetItems = 50
	fleetRules = "20/1s,60/5s"
)

func TestFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet takes about 15s")
	}
	rdb := redistest.Start(t)
	rules, err := throttle.ParseRules(fleetRules)
	if err != nil {
		t.Fatal(err)
	}
	strict, err := strictserver.New(strictserver.Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	requests := map[string]int{} // by path, refused or not
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests[r.URL.Path]++
		mu.Unlock()
		strict.ServeHTTP(w, r)
	}))
	defer srv.Close()

	dir := t.TempDir()
	pace := buildPace(t, dir)
	cmds := make([]*exec.Cmd, fleetProcs)
	stderrs := make([]*strings.Builder, fleetProcs)
	for p := range cmds {
		var items strings.Builder
		for i := 1; i <= fleetItems; i++ {
			fmt.Fprintf(&items, "p%d-%d\n", p, i)
		}
		file := filepath.Join(dir, "items"+strconv.Itoa(p))
		if err := os.WriteFile(file, []byte(items.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		cmds[p] = exec.Command(pace, "fetch", "-r", fleetRules, "--margin", fleetMargin.String(), "-j", "4",
			"--retries", "0", "--redis", "redis://"+rdb.Addr(), "--key", "fleet", "--summary", "json",
			"-a", file, srv.URL+"/{}")
		cmds[p].Env = append(os.Environ(), redisURLEnv+"=")
		stderrs[p] = &strings.Builder{}
		cmds[p].Stderr = stderrs[p]
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("pace %d: %v\n%s", p, err, stderrs[p])
		}
	}

	st := strict.Stats()
	total := fleetProcs * fleetItems
	if st.Refused != 0 || st.Accepted != int64(total) {
		t.Errorf("server accepted %d and refused %d, want %d and 0", st.Accepted, st.Refused, total)
	}
	for p := range fleetProcs {
		for i := 1; i <= fleetItems; i++ {
			if n := requests[fmt.Sprintf("/p%d-%d", p, i)]; n != 1 {
				t.Errorf("item p%d-%d requested %d times, want once", p, i, n)
			}
		}
	}
	if len(requests) != total {
		t.Errorf("%d paths requested, want %d", len(requests), total)
	}
	fastest := throttle.Fastest(rules, total, 0, 0)
	makespan := st.Makespan()
	ratio := float64(makespan) / float64(fastest)
	t.Logf("fleet: %d processes x %d calls under %s, margin %v: makespan %v, fastest legal %v, ratio %.4f, refused %d",
		fleetProcs, fleetItems, fleetRules, *fleetMargin, makespan.Round(time.Millisecond), fastest, ratio, st.Refused)
	// The server refuses anything faster than the rules allow, so only the
	// upper bound can fail.
	if ratio > 1+*fleetTolerance {
		t.Errorf("makespan %v is %.1f%% over the fastest legal %v, want at most %.0f%%",
			makespan, (ratio-1)*100, fastest, *fleetTolerance*100)
	}
}

// buildPace builds pace into dir and returns its path. The fleet's
// processes are built without the race detector even under go test
// -race: four instrumented processes on a small, busy machine are late
// by hundreds of milliseconds between admission and request, which only
// a margin that large would absorb. Without the go tool it falls back on
// the test binary, run as pace through TestMain.
func buildPace(t *testing.T, dir string) string {
	t.Helper()
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Logf("no go tool (%v): the fleet runs the test binary as pace", err)
		return "pace"
	}
	exe := filepath.Join(dir, "pace")
	cmd := exec.Command(gotool, "build", "-o", exe, "github.com/pace-cli/pace")
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build pace: %v\n%s", err, out)
	}
	return exe
}

// BenchmarkFleetAdmit measures admissions through a local redis-server
// from 1 and from 4 separate processes, each admitting one call at a time
// as pace does, under two rules that never make them wait. It reports the
// fleet's admissions per second and the Redis round trips per admission.
func BenchmarkFleetAdmit(b *testing.B) {
	srv := redistest.Start(b)
	for _, procs := range []int{1, 4} {
		b.Run("procs="+strconv.Itoa(procs), func(b *testing.B) { benchmarkFleetAdmit(b, srv.Addr(), procs) })
	}
}

// admitRules are BenchmarkFleetAdmit's rules: exact logs, as most real
// rules are, too large to bind.
const admitRules = "100000/s,100000/10s"

func benchmarkFleetAdmit(b *testing.B, addr string, procs int) {
	key := fmt.Sprintf("bench-%d-%d", procs, time.Now().UnixNano()) // a fresh quota per run
	type child struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Reader
	}
	children := make([]child, procs)
	for i := range children {
		n := b.N / procs
		if i < b.N%procs {
			n++
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestAdmitChild$", "-test.bench=^$")
		cmd.Env = append(os.Environ(), "PACE_ADMIT_CHILD="+strings.Join([]string{addr, key, admitRules, strconv.Itoa(n)}, " "))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		children[i] = child{cmd: cmd, in: in, out: bufio.NewReader(out)}
	}
	readLine := func(c child) string {
		line, err := c.out.ReadString('\n')
		if err != nil {
			b.Fatalf("admit child: %v", err)
		}
		return strings.TrimSpace(line)
	}
	for _, c := range children {
		if l := readLine(c); l != "ready" {
			b.Fatalf("admit child said %q, want ready", l)
		}
	}
	b.ResetTimer()
	start := time.Now()
	for _, c := range children {
		c.in.Close() // go
	}
	var roundTrips, admitted int64
	for _, c := range children {
		var a, r int64
		if _, err := fmt.Sscanf(readLine(c), "admitted %d roundtrips %d", &a, &r); err != nil {
			b.Fatal(err)
		}
		admitted += a
		roundTrips += r
	}
	elapsed := time.Since(start)
	b.StopTimer()
	for _, c := range children {
		if err := c.cmd.Wait(); err != nil {
			b.Fatalf("admit child: %v", err)
		}
	}
	if admitted != int64(b.N) {
		b.Fatalf("%d admitted, want %d", admitted, b.N)
	}
	b.ReportMetric(float64(admitted)/elapsed.Seconds(), "admits/s")
	b.ReportMetric(float64(roundTrips)/float64(admitted), "roundtrips/admit")
}

// TestAdmitChild is BenchmarkFleetAdmit's child process; it is skipped
// unless $PACE_ADMIT_CHILD is "ADDR KEY RULES N". It connects, admits one
// call to warm up, prints "ready", waits for stdin to close, admits N
// calls one at a time and prints how many and the round trips they took.
func TestAdmitChild(t *testing.T) {
	spec := os.Getenv("PACE_ADMIT_CHILD")
	if spec == "" {
		t.Skip("BenchmarkFleetAdmit's child process")
	}
	f := strings.Fields(spec)
	if len(f) != 4 {
		t.Fatalf("PACE_ADMIT_CHILD=%q, want ADDR KEY RULES N", spec)
	}
	rules, err := throttle.ParseRules(f[2])
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(f[3])
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: f[0]})
	defer client.Close()
	l, err := throttle.NewRedis(client, f[1], rules)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	admit := func() {
		release, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	admit()
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n') // until closed
	before, admittedBefore := l.RoundTrips(), l.Stats().Admitted
	for range n {
		admit()
	}
	fmt.Printf("admitted %d roundtrips %d\n", l.Stats().Admitted-admittedBefore, l.RoundTrips()-before)
}
