//go:build unix && !solaris && !aix

package outfile

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestMain runs the test binary as a writer of its own, for the tests
// that kill one: with PACE_OUTFILE_WRITER=DIR it starts writing DIR/out
// (Create) and, beside it, a temporary file with a name (as where files
// cannot be made without one), says "writing" on stdout, and waits to be
// killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("PACE_OUTFILE_WRITER"); dir != "" {
		f, err := Create(context.Background(), filepath.Join(dir, "out"))
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		f.Write(make([]byte, 1<<20))
		named, err := createNamed(dir, "named")
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		named.f.WriteString("half")
		fmt.Println("writing")
		io.Copy(io.Discard, os.Stdin) // until killed
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// startWriter starts a writer into dir (TestMain) and returns it once it
// writes.
func startWriter(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "PACE_OUTFILE_WRITER="+dir)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "writing\n" {
		t.Fatalf("writer said %q, want writing", line)
	}
	return cmd
}

// TestKilledWriterLeavesNothing kills a writer (SIGKILL) half way: on
// Linux its file had no name yet, and nothing is left; a temporary file
// that had one (elsewhere, or a file system without O_TMPFILE) is left,
// and Sweep removes it once its writer is gone, never before.
func TestKilledWriterLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	w := startWriter(t, dir)
	leftovers := entries(t, dir)
	if n := Sweep(dir); n != 0 {
		t.Errorf("Sweep with the writer alive = %d, want 0", n)
	}
	if got := entries(t, dir); !slices.Equal(got, leftovers) {
		t.Errorf("Sweep with the writer alive: directory holds %q, want %q as before", got, leftovers)
	}
	w.Process.Signal(syscall.SIGKILL)
	w.Wait()
	got := entries(t, dir)
	unnamed := canOpenUnnamed(dir)
	if want := 2; !unnamed {
		if len(got) != want {
			t.Errorf("after the kill (no O_TMPFILE here): directory holds %q, want the two temporary files", got)
		}
	} else if len(got) != 1 || !isTempName(got[0]) {
		t.Errorf("after the kill: directory holds %q, want only the named temporary file (out's had no name)", got)
	}
	if n := Sweep(dir); n != len(got) {
		t.Errorf("Sweep with the writer gone = %d, want %d", n, len(got))
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("after Sweep: directory holds %q, want nothing", got)
	}
}

// TestSweepLeavesTheLivingAndOthers: a writer in this process holds its
// temporary file locked as another process does (a flock belongs to the
// open file), so Sweep leaves it, and the writer commits it; one whose
// descriptor was closed without removing it (as the kernel closes a
// killed writer's) is removed; nothing else is touched: an older pace's
// temporary files (no lock to tell), a link, a FIFO, a directory, files
// of other names.
func TestSweepLeavesTheLivingAndOthers(t *testing.T) {
	dir := t.TempDir()
	live, err := createNamed(dir, "live")
	if err != nil {
		t.Fatal(err)
	}
	dead, err := createNamed(dir, "dead")
	if err != nil {
		t.Fatal(err)
	}
	dead.f.Close()
	outside := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(outside, []byte("keep"), 0o644)
	others := []string{".x.pace-3k2j1h.tmp", "notes.part", ".l.pace-aaaaaaaa.part", ".f.pace-bbbbbbbb.part", ".d.pace-cccccccc.part"}
	os.WriteFile(filepath.Join(dir, others[0]), nil, 0o644)
	os.WriteFile(filepath.Join(dir, others[1]), nil, 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, others[2])); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, others[3]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, others[4]), 0o700); err != nil {
		t.Fatal(err)
	}
	if n := Sweep(dir); n != 1 {
		t.Errorf("Sweep = %d, want 1 (the dead writer's)", n)
	}
	want := append([]string{filepath.Base(live.name)}, others...)
	slices.Sort(want)
	if got := entries(t, dir); !slices.Equal(got, want) {
		t.Errorf("after Sweep: directory holds %q, want %q", got, want)
	}
	live.f.WriteString("whole")
	if err := live.commit(filepath.Join(dir, "live"), true); err != nil {
		t.Fatalf("the living writer's commit = %v", err)
	}
	if got := readFile(t, filepath.Join(dir, "live")); got != "whole" {
		t.Errorf("live holds %q, want %q", got, "whole")
	}
	if got := readFile(t, outside); got != "keep" {
		t.Errorf("the link's target holds %q, want %q", got, "keep")
	}
}
