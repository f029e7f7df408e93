package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNewcomerPath walks the README as a newcomer would, on a clean clone
// of the committed tree: the first command it shows (build, then the
// sample run), then the "Tokens per minute" example against the stand-in
// server, each run exactly as written (but for the server's port, which is
// chosen free). It needs git and a checkout; -short skips it.
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
		// The stand-in server shares the machine with pace and with the
		// rest of the suite: at a load of 5 on 2 cores it once refused 2
		// of the 40, its own handlers starved as long as pace's margin. A
		// refusal that is pace's comes again; one of a starved server
		// seldom does. So a run with refusals is run once more, and only a
		// second one fails.
		for attempt := 1; ; attempt++ {
			out := run(t, dir, env, strings.ReplaceAll(tokens, "8765", strconv.Itoa(freePort(t))))
			if strings.Contains(out, `"accepted":40,"refused":0`) {
				break
			}
			if attempt == 2 {
				t.Errorf("the stand-in server did not accept all 40 calls and refuse none, twice:\n%s", out)
				break
			}
			t.Logf("the stand-in server did not accept all 40 calls and refuse none (load %s); once more:\n%s", loadAvg(), out)
		}
		checkClean(t, dir)
	})
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
