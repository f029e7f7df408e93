package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pace-cli/pace/internal/joblog"
	"github.com/pace-cli/pace/internal/strictserver"
)

// TestNewcomerPath walks the README as a newcomer would, on a clean clone
// of the committed tree: the first command it shows (build, then the
// sample run), then the "Tokens per minute" example against the stand-in
// server, each run exactly as written (but for the server's port, which is
// chosen free, and the records the tokens example is judged by: pace's
// job log and the server's requests). It needs git and a checkout; -short
// skips it.
//
// The two run side by side, each in a clone of its own: they spend most
// of their time waiting on their rules (7s and 17s), not on a CPU. Their
// builds run with -trimpath (added to GOFLAGS), so that the build cache
// serves them whatever directory the clone is in: without it the cache
// keys each package by its directory, and every run compiled all of pace
// again (12s of CPU) in its new temporary directory. Their packages are
// compiled once first (go list -export, which links nothing), so that a
// cold cache compiles them once, not in both clones at the same time.
func TestNewcomerPath(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the newcomer path builds pace and runs for about 20s")
	}
	if err := exec.Command("git", "rev-parse", "--verify", "HEAD").Run(); err != nil {
		t.Skip("not a git checkout with a commit: no clean clone to try")
	}
	t.Parallel()
	goflags, err := exec.Command("go", "env", "GOFLAGS").Output()
	if err != nil {
		t.Fatalf("go env GOFLAGS: %v", err)
	}
	env := append(os.Environ(), "GOFLAGS="+strings.TrimSpace(string(goflags)+" -trimpath"))
	first, firstReadme := cleanClone(t)
	run(t, first, env, "go list -export -deps . ./internal/strictserver/strictd >/dev/null")

	t.Run("first block", func(t *testing.T) {
		t.Parallel()
		dir, readme := first, firstReadme
		// The two commands: the first runs pace's main job, the second
		// is this test suite (not run again from here).
		first := codeBlock(t, readme, "")
		var cmds []string
		for _, line := range strings.Split(first, "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				cmds = append(cmds, line)
			}
		}
		if len(cmds) != 2 || cmds[1] != "scripts/test.sh" {
			t.Fatalf("the README's first block should hold two commands, the second scripts/test.sh:\n%s", first)
		}
		out := run(t, dir, env, cmds[0])
		items, err := os.ReadFile(filepath.Join(dir, "examples/items.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.Count(out, "\n"), strings.Count(string(items), "\n"); got != want {
			t.Errorf("%s printed %d lines, want one per item (%d):\n%s", cmds[0], got, want, out)
		}
		checkClean(t, dir)
	})

	t.Run("tokens per minute", func(t *testing.T) {
		t.Parallel()
		dir, readme := cleanClone(t)
		// On a free port.
		tokens := codeBlock(t, readme, "## Tokens per minute")
		if !strings.Contains(tokens, "8765") {
			t.Fatalf("the Tokens per minute example no longer uses port 8765:\n%s", tokens)
		}
		// Run as written, but for two records: the job log (each call's
		// admission instant) and the server's requests (each arrival),
		// both outside the clone, on the one clock of this machine.
		logs := t.TempDir()
		jobLog, requests := filepath.Join(logs, "jobs.log"), filepath.Join(logs, "requests")
		script := strings.ReplaceAll(tokens, "8765", strconv.Itoa(freePort(t)))
		for _, r := range [][2]string{{"./pace fetch ", "./pace fetch --joblog '" + jobLog + "' "}, {"bin/strictd -addr ", "bin/strictd -requests '" + requests + "' -addr "}} {
			if !strings.Contains(script, r[0]) {
				t.Fatalf("the Tokens per minute example no longer runs %q:\n%s", r[0], tokens)
			}
			script = strings.Replace(script, r[0], r[1], 1)
		}
		out := run(t, dir, env, script)
		judgeTokens(t, out, jobLog, requests)
		checkClean(t, dir)
	})
}

// judgeTokens checks the Tokens per minute example's run: every prompt
// accepted exactly once, each refused attempt tried again, and no refusal
// that pace's decisions explain. The stand-in server shares the machine
// with pace and the rest of the suite, and at a load of 5 on 2 cores its
// handlers were seen starved longer than pace's margin: such a refusal is
// logged, with the lags that explain it, not failed. pace fetch's margin
// adapts, and is never below its least, 10ms (cmd's defaultFetchMargin;
// docs/design.md): the admissions must keep every rule widened by that,
// less the microsecond to which the job log keeps them.
func judgeTokens(t *testing.T, out, jobLog, requests string) {
	t.Helper()
	const prompts, least = 40, 10 * time.Millisecond
	var st struct{ Accepted, Refused int }
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, `{"accepted":`) {
			if err := json.Unmarshal([]byte(line), &st); err != nil {
				t.Fatalf("strictd's counts %q: %v", line, err)
			}
		}
	}
	b, err := os.ReadFile(jobLog)
	if err != nil {
		t.Fatal(err)
	}
	jl, err := joblog.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", jobLog, err)
	}
	if len(jl.Rules) != 2 {
		t.Fatalf("%s: rules %v in its header, want the example's two", jobLog, jl.Rules)
	}
	// Each prompt's attempts, in the order they were admitted.
	attempts := map[string][]joblog.Entry{}
	for _, e := range jl.Entries {
		id := idOf(t, strings.TrimPrefix(e.Command, "GET "))
		attempts[id] = append(attempts[id], e)
	}
	for _, es := range attempts {
		slices.SortFunc(es, func(a, b joblog.Entry) int { return a.Start.Compare(b.Start) })
	}
	b, err = os.ReadFile(requests)
	if err != nil {
		t.Fatal(err)
	}
	var sent []strictserver.Sent
	accepted := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if len(f) != 3 || err != nil {
			t.Fatalf("%s: bad line %q", requests, line)
		}
		id := idOf(t, f[2])
		if len(attempts[id]) == 0 {
			t.Fatalf("the server saw %s more often than the job log records its attempts", f[2])
		}
		e := attempts[id][0]
		attempts[id] = attempts[id][1:]
		if f[1] == "accepted" {
			accepted[id]++
		}
		sent = append(sent, strictserver.Sent{Name: "prompt " + id, Admitted: e.Start, Arrived: time.Unix(0, ns), Cost: e.Cost(), Refused: f[1] == "refused"})
	}
	for id, es := range attempts {
		if len(es) > 0 {
			t.Errorf("prompt %s: %d attempts in the job log that the server never saw", id, len(es))
		}
	}
	if len(accepted) != prompts || st.Accepted != prompts || st.Refused != len(sent)-prompts {
		t.Errorf("the server accepted %d calls of %d prompts and refused %d, of %d it saw; want each of the %d accepted once, each refusal tried again:\n%s",
			st.Accepted, len(accepted), st.Refused, len(sent), prompts, out)
	}
	for id, n := range accepted {
		if n != 1 {
			t.Errorf("prompt %s accepted %d times, want once", id, n)
		}
	}
	v := strictserver.Judge(jl.Rules, least-time.Microsecond, sent)
	for _, f := range v.Faults {
		t.Error(f)
	}
	for _, x := range v.Excused {
		t.Logf("excused by the machine (load %s): %s", loadAvg(), x)
	}
}

// idOf returns the id= of a Tokens per minute example's URL or path.
func idOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil || !u.Query().Has("id") {
		t.Fatalf("%q: want a URL with an id: %v", rawURL, err)
	}
	return u.Query().Get("id")
}

// cleanClone clones the committed tree into a new directory and returns
// it, with the README it holds.
func cleanClone(t *testing.T) (dir, readme string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "pace")
	if out, err := exec.Command("git", "clone", "--quiet", "--no-hardlinks", ".", dir).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, string(b)
}

// checkClean checks that what the README built is ignored by git: the
// clone is clean.
func checkClean(t *testing.T, dir string) {
	t.Helper()
	status, err := exec.Command("git", "-C", dir, "status", "--porcelain").Output()
	if err != nil || len(status) != 0 {
		t.Errorf("after the README's commands, git status --porcelain = %q, %v; want nothing", status, err)
	}
}

// TestReadmeTables: every table row of the README belongs to a table (a
// header row and its |---| line before it, with no blank line between):
// a stray row shows as a line of pipes.
func TestReadmeTables(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(readme), "\n")
	inTable, inCode := false, false
	for i, line := range lines {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		row := !inCode && strings.HasPrefix(line, "|")
		switch {
		case !row:
			inTable = false
		case !inTable && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "|---"):
			inTable = true // a header
		case !inTable:
			t.Errorf("README.md:%d: a table row outside a table (a blank line above it?): %s", i+1, line)
		}
	}
}

// codeBlock returns the first ```sh block after the heading (or in the
// whole text for "").
func codeBlock(t *testing.T, text, heading string) string {
	t.Helper()
	if heading != "" {
		i := strings.Index(text, "\n"+heading+"\n")
		if i < 0 {
			t.Fatalf("README has no %q section", heading)
		}
		text = text[i:]
	}
	_, rest, ok := strings.Cut(text, "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("no sh code block after %q", heading)
	}
	return block
}

// run runs script with sh -e in dir, in the environment env, and returns
// its stdout.
func run(t *testing.T, dir string, env []string, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", script, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// loadAvg returns the load averages, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
