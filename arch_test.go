package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportBoundaries keeps the layering of docs/design.md honest: imports
// go cmd -> runner -> throttle; throttle uses only the standard library
// outside its Redis files; runner knows nothing of cobra or terminals.
func TestImportBoundaries(t *testing.T) {
	const mod = "github.com/pace-cli/pace/"
	rules := []struct {
		dir     string
		allowed func(file, path string) bool
	}{
		{"throttle", func(file, path string) bool {
			if strings.HasPrefix(filepath.Base(file), "redis") && path == "github.com/redis/go-redis/v9" {
				return true
			}
			return isStd(path)
		}},
		{"throttle/throttletest", func(_, path string) bool { return isStd(path) || path == mod+"throttle" }},
		{"runner", func(_, path string) bool {
			return isStd(path) || path == mod+"throttle" || path == "github.com/mattn/go-shellwords" || path == "golang.org/x/sys/unix"
		}},
	}
	for _, r := range rules {
		files, err := filepath.Glob(filepath.Join(r.dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !r.allowed(f, path) {
					t.Errorf("%s imports %q, which its layer may not use", f, path)
				}
			}
		}
	}
}

// isStd reports whether path is a standard library package: its first
// element has no dot.
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
