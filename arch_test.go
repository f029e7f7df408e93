package main

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestImportBoundaries keeps the layering of docs/architecture.md honest,
// over what each package really compiles (go list -deps):
//
//   - throttle is the library: the standard library only, so that a
//     program wanting the in-memory limiter compiles nothing else;
//   - throttle's backends (redisrate, ...) add their store's client and
//     nothing of pace's own but throttle and internal/redact;
//   - runner and its executors know nothing of cobra, flags or terminals;
//   - nothing imports cmd.
func TestImportBoundaries(t *testing.T) {
	const mod = "github.com/pace-cli/pace"
	// isThrottle: package throttle, with what it compiles of its own, and
	// throttle/backend, the plumbing between a backend and its callers
	// (admissions a backend hands out, the signal that a caller holds its
	// place in a backend's queue, or an in-flight slot), and the FIFO lock
	// that backends and the learner queue their callers with: standard
	// library and throttle only.
	isThrottle := func(dep string) bool {
		return dep == mod+"/throttle" || dep == mod+"/throttle/internal/link" || dep == mod+"/throttle/internal/tally" ||
			dep == mod+"/throttle/internal/held" || dep == mod+"/throttle/backend" || dep == mod+"/throttle/internal/fifo"
	}
	// isEngine: throttle and the library around it, what pace knows about
	// servers (standard library only, as the rules below check).
	isEngine := func(dep string) bool {
		return isThrottle(dep) || slices.Contains([]string{mod + "/throttle/learn", mod + "/throttle/margin", mod + "/throttle/pacehttp"}, dep)
	}
	rules := []struct {
		pkg     string
		allowed func(dep string) bool
	}{
		// throttle's internal packages link and tally are standard
		// library only themselves (they are in throttle's -deps).
		{mod + "/throttle", func(dep string) bool { return isStd(dep) || strings.HasPrefix(dep, mod+"/throttle/internal/") }},
		// The engine around the limiter is the library too: what pace
		// knows about servers, for any Go program.
		{mod + "/throttle/learn", func(dep string) bool { return isStd(dep) || isThrottle(dep) }},
		{mod + "/throttle/margin", func(dep string) bool { return isStd(dep) || isThrottle(dep) }},
		{mod + "/throttle/pacehttp", func(dep string) bool {
			return isStd(dep) || isEngine(dep) || strings.HasPrefix(dep, "vendor/golang.org/x/")
		}},
		// The picture and the redactor lean on nothing: a plotting
		// library was weighed and rejected (internal/plot's doc).
		{mod + "/internal/plot", isStd},
		{mod + "/internal/redact", isStd},
		{mod + "/internal/outfile", isStd},
		{mod + "/internal/osfiles", isStd},
		{mod + "/internal/foreground", func(dep string) bool { return isStd(dep) || strings.HasPrefix(dep, "golang.org/x/sys/") }}, // runner/command uses it
		// Imported by main for its side effect, before the heap grows:
		// syscall and unsafe only, so that it initialises first.
		{mod + "/internal/hugeheap", func(dep string) bool { return isStd(dep) && !slices.Contains([]string{"os", "strings", "fmt"}, dep) }},
		// What cmd renders and reports is computed below it, from plain
		// values and the pool's results: never cobra or terminals.
		{mod + "/internal/human", func(dep string) bool { return isStd(dep) || isThrottle(dep) }},
		{mod + "/internal/audit", func(dep string) bool {
			return isStd(dep) || isThrottle(dep) || dep == mod+"/runner" || isPkg(dep, "joblog", "regfile", "human")
		}},
		{mod + "/internal/summary", func(dep string) bool {
			return isStd(dep) || isEngine(dep) || dep == mod+"/runner" || isPkg(dep, "human")
		}},
		{mod + "/internal/progress", func(dep string) bool {
			return isStd(dep) || isEngine(dep) || dep == mod+"/runner" || isPkg(dep, "human", "summary")
		}},
		{mod + "/internal/spec", func(dep string) bool { return isStd(dep) || isThrottle(dep) }},
		// The command reference is written from cobra's tree alone.
		{mod + "/internal/clidoc", func(dep string) bool { return isStd(dep) || strings.HasPrefix(dep, "github.com/spf13/") }},
		{mod + "/internal/halt", func(dep string) bool { return isStd(dep) || isThrottle(dep) || dep == mod+"/runner" }},
		// Opening a run's backend: the stores and their clients, nothing
		// of the CLI.
		{mod + "/internal/limiter", func(dep string) bool {
			return !strings.HasPrefix(dep, "github.com/spf13/") && !strings.HasPrefix(dep, mod+"/cmd") &&
				(!strings.HasPrefix(dep, mod+"/") || dep == mod+"/runner" || strings.HasPrefix(dep, mod+"/throttle") || isPkg(dep, "human", "redact"))
		}},
		// items, which runlog reads, asks osfiles (standard library only)
		// whether stdin was closed at start.
		{mod + "/internal/runlog", func(dep string) bool {
			return isStd(dep) || isThrottle(dep) || dep == mod+"/runner" || isPkg(dep, "items", "joblog", "regfile", "resume", "human", "osfiles")
		}},
		// Metrics are made of the summary's numbers and served by the
		// Prometheus client: nothing of the CLI or the stores.
		{mod + "/internal/metrics", func(dep string) bool {
			return !strings.HasPrefix(dep, "github.com/spf13/") && !strings.HasPrefix(dep, mod+"/cmd") && !strings.Contains(dep, "redis") &&
				(!strings.HasPrefix(dep, mod+"/") || dep == mod+"/runner" || isEngine(dep) || isPkg(dep, "summary", "human"))
		}},
		{mod + "/internal/adapt", func(dep string) bool { return isStd(dep) || isEngine(dep) || dep == mod+"/runner" }},
		{mod + "/internal/interrupt", func(dep string) bool {
			return isStd(dep) || isThrottle(dep) || dep == mod+"/runner" || isPkg(dep, "human")
		}},
		// pace quota's views describe what the stores' Inspect return:
		// the stores and their clients, nothing of the CLI or the pool.
		{mod + "/internal/quota", func(dep string) bool {
			return !strings.HasPrefix(dep, "github.com/spf13/") && !strings.HasPrefix(dep, mod+"/runner") && !strings.HasPrefix(dep, mod+"/cmd")
		}},
		{mod + "/throttle/redisrate", func(dep string) bool {
			return isStd(dep) || dep == mod+"/throttle" || dep == mod+"/throttle/backend" || strings.HasPrefix(dep, mod+"/throttle/internal/") || dep == mod+"/internal/redact" ||
				strings.HasPrefix(dep, "github.com/redis/go-redis/") || dep == "github.com/cespare/xxhash/v2" ||
				dep == "github.com/dgryski/go-rendezvous" || strings.HasPrefix(dep, "go.uber.org/atomic") ||
				strings.HasPrefix(dep, "golang.org/x/sys/")
		}},
		{mod + "/throttle/localstore", func(dep string) bool {
			return isStd(dep) || dep == mod+"/throttle" || dep == mod+"/throttle/backend" || strings.HasPrefix(dep, mod+"/throttle/internal/") || strings.HasPrefix(dep, "go.etcd.io/bbolt") ||
				strings.HasPrefix(dep, "golang.org/x/sys/")
		}},
		{mod + "/runner", func(dep string) bool { return isStd(dep) || isThrottle(dep) }},
		{mod + "/runner/command", func(dep string) bool {
			return isStd(dep) || isThrottle(dep) || dep == mod+"/runner" || dep == "github.com/mattn/go-shellwords" ||
				strings.HasPrefix(dep, "golang.org/x/sys/") || // pidfd, clone flags: the system's own calls
				isPkg(dep, "foreground") // the standard library and x/sys only: what a start that failed lacked (MissingPart), as pace exec says it
		}},
		// The executors' HTTP/1.1 path beside http.Transport: the
		// standard library only.
		{mod + "/runner/internal/direct", func(dep string) bool {
			return isStd(dep) || strings.HasPrefix(dep, "vendor/golang.org/x/") || dep == mod+"/runner/internal/rawconn"
		}},
		// Reads and writes the scheduler is not told of: the standard
		// library only.
		{mod + "/runner/internal/rawconn", isStd},
		// The proxy's HTTP/1.1 loop beside net/http's server: the
		// standard library only.
		{mod + "/runner/internal/leanhttp", func(dep string) bool { return isStd(dep) || dep == mod+"/runner/internal/rawconn" }},
		{mod + "/runner/proxy", func(dep string) bool {
			return isStd(dep) || isEngine(dep) || dep == mod+"/runner" || dep == mod+"/runner/internal/direct" ||
				dep == mod+"/runner/internal/leanhttp" || dep == mod+"/runner/internal/rawconn" || dep == mod+"/internal/redact" ||
				strings.HasPrefix(dep, "vendor/golang.org/x/")
		}},
		{mod + "/runner/fetch", func(dep string) bool {
			return isStd(dep) || isEngine(dep) || slices.Contains([]string{mod + "/runner", mod + "/runner/internal/direct", mod + "/runner/internal/rawconn", mod + "/internal/redact", mod + "/internal/tmpl", mod + "/internal/outfile"}, dep) ||
				strings.HasPrefix(dep, "vendor/golang.org/x/")
		}},
	}
	for _, r := range rules {
		deps := goList(t, "-deps", r.pkg)
		for _, d := range deps {
			if d == r.pkg {
				continue
			}
			if !r.allowed(d) {
				t.Errorf("%s depends on %s, which its layer may not use", r.pkg, d)
			}
		}
	}
	for _, line := range strings.Split(goListRaw(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./..."), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == mod || strings.HasPrefix(f[0], mod+"/cmd") {
			continue
		}
		if slices.Contains(f[1:], mod+"/cmd") {
			t.Errorf("%s imports cmd: only main may", f[0])
		}
	}
}

// TestNoBackendSpecialCases keeps cmd and runner on the one backend
// contract: no type assertion or type switch on a limiter or backend type.
func TestNoBackendSpecialCases(t *testing.T) {
	re := regexp.MustCompile(`\.\(\*?(throttle\.(Limiter|Backend)|redisrate\.\w+|localstore\.\w+)\)|case \*?(throttle\.(Limiter|Backend)|redisrate\.\w+|localstore\.\w+)\b`)
	for _, dir := range []string{"cmd", "runner", "runner/command", "runner/fetch"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(b), "\n") {
				if re.MatchString(line) {
					t.Errorf("%s:%d: a special case for one backend: %s", f, i+1, strings.TrimSpace(line))
				}
			}
		}
	}
}

// TestBudgets keeps issue #20's numbers: package throttle exports at most
// 40 names (as go doc -all lists them: functions, types, methods of
// exported types, and each constant and variable), and cmd, which only
// wires flags and renders, has at most 6,000 lines of non-test Go.
func TestBudgets(t *testing.T) {
	files, err := filepath.Glob("throttle/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names = append(names, d.Name.Name)
					continue
				}
				typ := d.Recv.List[0].Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				if id, ok := typ.(*ast.Ident); ok && id.IsExported() {
					names = append(names, id.Name+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						if spec.Name.IsExported() {
							names = append(names, spec.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	if len(names) > 40 {
		slices.Sort(names)
		t.Errorf("package throttle exports %d names, want at most 40: %s", len(names), strings.Join(names, " "))
	}

	files, err = filepath.Glob("cmd/*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			lines++
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if lines > 6000 {
		t.Errorf("cmd has %d lines of non-test Go, want at most 6,000: what is not flags, wiring or rendering belongs below it", lines)
	}
	t.Logf("throttle exports %d names; cmd has %d lines", len(names), lines)
}

// goList runs go list with args and returns its words.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	return strings.Fields(goListRaw(t, args...))
}

// goListRaw runs go list with args and returns its output.
func goListRaw(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return string(out)
}

// isPkg reports whether dep is one of pace's internal packages named.
func isPkg(dep string, names ...string) bool {
	for _, n := range names {
		if dep == "github.com/pace-cli/pace/internal/"+n {
			return true
		}
	}
	return false
}

// isStd reports whether path is a standard library package: its first
// element has no dot.
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
