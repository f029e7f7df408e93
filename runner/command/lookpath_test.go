//go:build unix

package command

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pace-cli/pace/runner"
)

// writeProgram writes an executable shell script that prints what.
func writeProgram(t *testing.T, dir, name, what string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho "+what+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// runOut runs argv and returns its stdout, failing the test if it fails.
func runOut(t *testing.T, e *Executor, argv ...string) string {
	t.Helper()
	res := e.Execute(context.Background(), &runner.Job{Seq: 1, Argv: argv})
	defer res.Close()
	if !res.OK() {
		t.Fatalf("%q: %s", argv, res.Status())
	}
	return string(res.Stdout.Bytes())
}

func TestPathCacheKeepsWhatItFound(t *testing.T) {
	var c pathCache
	p1, cached, err := c.look("sh")
	if err != nil || cached || !filepath.IsAbs(p1) {
		t.Fatalf("look(sh) = %q, cached %v, %v; want an absolute path, not cached", p1, cached, err)
	}
	p2, cached, err := c.look("sh")
	if err != nil || !cached || p2 != p1 {
		t.Errorf("look(sh) again = %q, cached %v, %v; want %q from the cache", p2, cached, err, p1)
	}
	if p, cached, err := c.look("./x/sh"); p != "./x/sh" || cached || err != nil {
		t.Errorf("look(./x/sh) = %q, %v, %v; want it unchanged", p, cached, err)
	}
	if _, _, err := c.look("pace-no-such-program"); err == nil {
		t.Error("look(pace-no-such-program) found something")
	}
}

// A new PATH is a new table: the same name may now mean another program.
func TestExecuteLookPathFollowsPATH(t *testing.T) {
	dir1, dir2 := t.TempDir(), t.TempDir()
	writeProgram(t, dir1, "pace-prog", "one")
	writeProgram(t, dir2, "pace-prog", "two")
	e := &Executor{Builder: Lines{}}
	defer e.Close()
	sys := os.Getenv("PATH")
	t.Setenv("PATH", dir1+":"+sys)
	if got := runOut(t, e, "pace-prog"); got != "one\n" {
		t.Fatalf("got %q, want one", got)
	}
	t.Setenv("PATH", dir2+":"+sys)
	if got := runOut(t, e, "pace-prog"); got != "two\n" {
		t.Errorf("after PATH changed: got %q, want two", got)
	}
}

// A program that goes away is looked for again, as a shell does: the job
// runs the one now first in PATH, or fails as not found.
func TestExecuteLookPathForgetsRemovedProgram(t *testing.T) {
	dir1, dir2 := t.TempDir(), t.TempDir()
	writeProgram(t, dir1, "pace-prog", "one")
	e := &Executor{Builder: Lines{}}
	defer e.Close()
	t.Setenv("PATH", dir1+":"+dir2+":"+os.Getenv("PATH"))
	if got := runOut(t, e, "pace-prog"); got != "one\n" {
		t.Fatalf("got %q, want one", got)
	}
	os.Remove(filepath.Join(dir1, "pace-prog"))
	writeProgram(t, dir2, "pace-prog", "two")
	if got := runOut(t, e, "pace-prog"); got != "two\n" {
		t.Errorf("after removing the first: got %q, want two", got)
	}
	os.Remove(filepath.Join(dir2, "pace-prog"))
	res := e.Execute(context.Background(), &runner.Job{Seq: 3, Argv: []string{"pace-prog"}})
	if res.Status() != "job 3: start pace-prog: not found" {
		t.Errorf("after removing both: %q, want not found", res.Status())
	}
}

// A program replaced in place runs in its new version.
func TestExecuteLookPathSeesReplacedProgram(t *testing.T) {
	dir := t.TempDir()
	writeProgram(t, dir, "pace-prog", "one")
	e := &Executor{Builder: Lines{}}
	defer e.Close()
	t.Setenv("PATH", dir+":"+os.Getenv("PATH"))
	runOut(t, e, "pace-prog")
	writeProgram(t, dir, "pace-prog", "new")
	if got := runOut(t, e, "pace-prog"); got != "new\n" {
		t.Errorf("got %q, want new", got)
	}
}
